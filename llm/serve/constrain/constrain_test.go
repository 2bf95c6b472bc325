package constrain

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

func accepts(g *Grammar, text string) bool {
	m := g.NewMatcher()
	return m.Accept([]byte(text)) && m.Done()
}

func TestSchemaGrammar(t *testing.T) {
	schema := `{"type":"object","properties":{
		"name":{"type":"string","maxLength":5},
		"age":{"type":"integer"},
		"pet":{"enum":["cat","dog",null]},
		"tags":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":2},
		"score":{"type":["number","null"]},
		"nested":{"$ref":"#/$defs/node"}},
		"required":["name","age","pet"],
		"$defs":{"node":{"type":"object","properties":{"next":{"anyOf":[{"$ref":"#/$defs/node"},{"type":"null"}]}},"required":["next"]}}}`
	g, err := CompileSchema([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	for _, ok := range []string{
		`{"name":"Tom","age":3,"pet":"cat"}`,
		` {"name": "Tom", "age": -12, "pet": null}`,
		`{"name":"","age":0,"pet":"dog","tags":["a"]}`,
		`{"name":"a\"\u00e9","age":1,"pet":"dog","tags":["a","b"],"score":1.5e+3}`,
		`{"name":"x","age":1,"pet":"dog","score":null,"nested":{"next":{"next":null}}}`,
		`{"name":"héé","age":1,"pet":"dog"}`,
	} {
		if !accepts(g, ok) {
			t.Errorf("rejected %s", ok)
		}
	}
	for _, bad := range []string{
		`{"name":"Tom","age":3}`,                                  // pet missing
		`{"age":3,"name":"Tom","pet":"cat"}`,                      // declared order
		`{"name":"Tommy1","age":3,"pet":"cat"}`,                   // maxLength
		`{"name":"Tom","age":03,"pet":"cat"}`,                     // leading zero
		`{"name":"Tom","age":3.5,"pet":"cat"}`,                    // integer
		`{"name":"Tom","age":3,"pet":"cow"}`,                      // enum
		`{"name":"Tom","age":3,"pet":"cat","tags":[]}`,            // minItems
		`{"name":"Tom","age":3,"pet":"cat","tags":["a","b","c"]}`, // maxItems
		`{"name":"Tom","age":3,"pet":"cat",}`,
		`{"name":"Tom","age":3,"pet":"cat"}x`,
		`{"name":"T` + "\n" + `","age":3,"pet":"cat"}`,
		`{"name":"Tom","age":3,"pet":"cat","nested":{"next":{}}}`,
		`{"name":"Tom",  "age":3,"pet":"cat"}`,
	} {
		if accepts(g, bad) {
			t.Errorf("accepted %s", bad)
		}
	}
	// A prefix is not complete, but it continues.
	m := g.NewMatcher()
	if !m.Accept([]byte(`{"name":"T`)) || m.Done() {
		t.Errorf("prefix: accepted %v done %v", true, m.Done())
	}
	if m.Accept([]byte("\x01")) {
		t.Errorf("a control byte inside the name string was accepted")
	}
	if !m.Accept([]byte(`om","age":1,"pet":"cat"}`)) || !m.Final() {
		t.Errorf("completion not final")
	}
}

func TestJSONObjectGrammar(t *testing.T) {
	g := JSONObject()
	for _, ok := range []string{`{}`, `{"a":[1,2,{"b":null}],"c":"d"}`, ` {"x": true, "y": -0.5e-2}`} {
		if !accepts(g, ok) {
			t.Errorf("rejected %s", ok)
		}
		var v any
		if json.Unmarshal([]byte(ok), &v) != nil {
			t.Errorf("test case %s is not JSON", ok)
		}
	}
	for _, bad := range []string{`[]`, `"s"`, `{"a":}`, `{a:1}`, `{"a":1`, `{"a":01}`, `{"a":tru}`} {
		if accepts(g, bad) {
			t.Errorf("accepted %s", bad)
		}
	}
}

func TestUnsupportedSchemas(t *testing.T) {
	for _, s := range []string{
		`{"type":"string","pattern":"^a+$"}`,
		`{"type":"integer","minimum":3}`,
		`{"oneOf":[{"type":"string"}]}`,
		`{"type":"object","properties":{"a":{"type":"string","format":"email"}}}`,
		`{"type":"object","properties":{"a":{"type":"string"}},"required":["b"]}`,
		`{"$ref":"http://example.com/s.json"}`,
		`{"$ref":"#/$defs/missing"}`,
		`{"type":"string","maxLength":100000}`,
		`{"type":"strin"}`,
		`false`, `[1]`, `{"type":`, `{"enum":[]}`,
		strings.Repeat(`{"items":`, 100) + `{}` + strings.Repeat(`}`, 100),
	} {
		_, err := CompileSchema([]byte(s))
		var se *SchemaError
		if !errors.As(err, &se) {
			t.Errorf("%.60s: %v, want a SchemaError", s, err)
		}
	}
}

// Allowed through the trie must equal trying every token on its own.
func TestAllowedMatchesBruteForce(t *testing.T) {
	g, err := CompileSchema([]byte(`{"type":"object","properties":{"n":{"type":"integer"},"s":{"type":"array","items":{"type":"string","maxLength":3}}},"required":["n","s"]}`))
	if err != nil {
		t.Fatal(err)
	}
	pieces := []string{"", "{", "}", `"`, `{"`, `":`, "n", "s", "1", "12", "0", ",", `,"`, "[", "]", `"]`, "a", "ab", "abcd", " ", ` "`, `"n":`, `"s":["`, `"}`, "x", "é", ":", "-", "."}
	eog := []int32{0}
	v := NewVocab(pieces, eog)
	rng := rand.New(rand.NewPCG(1, 2))
	allowed := make([]bool, len(pieces))
	for trial := 0; trial < 20; trial++ {
		m := g.NewMatcher()
		text := ""
		for step := 0; step < 40; step++ {
			n := m.Allowed(v, allowed)
			var ids []int
			for id, p := range pieces {
				want := false
				if id == 0 {
					want = m.Done()
				} else if p != "" {
					want = m.Clone().Accept([]byte(p))
				}
				if allowed[id] != want {
					t.Fatalf("trial %d step %d token %q: allowed %v, alone %v", trial, step, p, allowed[id], want)
				}
				if want {
					ids = append(ids, id)
				}
			}
			if n != len(ids) {
				t.Fatalf("count %d, want %d", n, len(ids))
			}
			if len(ids) == 0 {
				t.Fatalf("trial %d step %d: nothing allowed after %q", trial, step, text)
			}
			id := ids[rng.IntN(len(ids))]
			if id == 0 {
				break
			}
			m.Accept([]byte(pieces[id]))
			text += pieces[id]
		}
	}
}

func TestSelfReference(t *testing.T) {
	for _, s := range []string{`{"$ref":"#"}`, `{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`} {
		if _, err := CompileSchema([]byte(s)); err == nil {
			t.Errorf("%s compiled", s)
		}
	}
}
