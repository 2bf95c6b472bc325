package constrain

import (
	"strings"
	"testing"
)

// FuzzCompileSchema: any bytes compile to a grammar or give a SchemaError, never a panic or a
// hang; a compiled grammar walks any bytes.
func FuzzCompileSchema(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"string","maxLength":3},"b":{"enum":[1,"x",null]}},"required":["a"]}`,
		`{"$defs":{"n":{"type":"object","properties":{"next":{"anyOf":[{"$ref":"#/$defs/n"},{"type":"null"}]}}}},"$ref":"#/$defs/n"}`,
		`{"type":["array","null"],"items":{"type":"integer"},"minItems":1,"maxItems":3}`,
		`{"type":"string","pattern":"x"}`, `true`, `{"const":{"a":[1,2]}}`, `[`, strings.Repeat("[", 300),
	} {
		f.Add(s, `{"a":"xy"}`)
	}
	f.Fuzz(func(t *testing.T, schema, text string) {
		g, err := CompileSchema([]byte(schema))
		if err != nil {
			if _, ok := err.(*SchemaError); !ok {
				t.Fatalf("%q: %T %v", schema, err, err)
			}
			return
		}
		m := g.NewMatcher()
		m.Accept([]byte(text))
		m.Done()
	})
}
