package constrain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Limits on what a schema may ask for: every bound becomes grammar rules.
const (
	maxSchemaDepth = 64
	maxBound       = 4096 // maxLength, maxItems
	maxRules       = 1 << 16
)

// obj is a JSON object that keeps its keys' order (properties are generated in the order the
// schema declares them).
type obj struct {
	keys []string
	vals map[string]any
}

// maxJSONDepth bounds the nesting decodeOrdered follows (it recurses).
const maxJSONDepth = 256

// decodeOrdered decodes JSON, objects as *obj.
func decodeOrdered(d *json.Decoder, depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, fmt.Errorf("nested deeper than %d levels", maxJSONDepth)
	}
	t, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch v := t.(type) {
	case json.Delim:
		switch v {
		case '{':
			o := &obj{vals: map[string]any{}}
			for d.More() {
				kt, err := d.Token()
				if err != nil {
					return nil, err
				}
				k := kt.(string)
				val, err := decodeOrdered(d, depth+1)
				if err != nil {
					return nil, err
				}
				if _, dup := o.vals[k]; !dup {
					o.keys = append(o.keys, k)
				}
				o.vals[k] = val
			}
			_, err := d.Token()
			return o, err
		case '[':
			var a []any
			for d.More() {
				val, err := decodeOrdered(d, depth+1)
				if err != nil {
					return nil, err
				}
				a = append(a, val)
			}
			_, err := d.Token()
			return a, err
		}
	}
	return t, nil
}

// SchemaError is a schema the grammar cannot express (or not a schema at all); Path names the
// place in the schema.
type SchemaError struct {
	Path, Msg string
}

func (e *SchemaError) Error() string {
	if e.Path == "" {
		return "schema: " + e.Msg
	}
	return fmt.Sprintf("schema at %s: %s", e.Path, e.Msg)
}

type compiler struct {
	b      *builder
	root   any
	refs   map[string]int32
	common map[string]elem
}

// JSONObject is the grammar of any JSON object (OpenAI's response_format json_object).
func JSONObject() *Grammar {
	c := newCompiler(nil)
	top := c.b.rule("root")
	c.b.define(top, seq(c.b.opt("lead", c.b.lit(" ")), c.anyObject()))
	return c.b.g
}

// CompileSchema compiles a JSON schema (its JSON text) into the grammar of the JSON texts
// that validate under it. Keywords it cannot enforce (pattern, format, minimum, oneOf, ...)
// are errors rather than ignored, so that what it generates always validates.
func CompileSchema(schema []byte) (*Grammar, error) {
	s, err := decodeSchema(schema)
	if err != nil {
		return nil, err
	}
	c := newCompiler(s)
	top := c.b.rule("root")
	v, err := c.value(s, "#", 0)
	if err != nil {
		return nil, err
	}
	c.b.define(top, seq(c.b.opt("lead", c.b.lit(" ")), v))
	if len(c.b.g.rules) > maxRules {
		return nil, &SchemaError{Msg: fmt.Sprintf("needs %d grammar rules, over the limit of %d", len(c.b.g.rules), maxRules)}
	}
	// After the optional leading space the value must be able to begin.
	if m := c.b.g.NewMatcher(); m.at == nil || !m.Accept([]byte(" ")) {
		return nil, &SchemaError{Msg: "admits no value (a reference that only refers to itself?)"}
	}
	return c.b.g, nil
}

// decodeSchema decodes a schema's JSON text, objects keeping their key order.
func decodeSchema(schema []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(schema))
	d.UseNumber()
	s, err := decodeOrdered(d, 0)
	if err != nil {
		return nil, &SchemaError{Msg: fmt.Sprintf("not JSON: %v", err)}
	}
	if d.More() {
		return nil, &SchemaError{Msg: "not JSON: text after the schema"}
	}
	return s, nil
}

func newCompiler(root any) *compiler {
	return &compiler{b: newBuilder(), root: root, refs: map[string]int32{}, common: map[string]elem{}}
}

// once builds a shared rule the first time it is asked for.
func (c *compiler) once(name string, build func() elem) elem {
	if e, ok := c.common[name]; ok {
		return e
	}
	e := build()
	c.common[name] = e
	return e
}

func (c *compiler) ws() elem { return c.once("ws", func() elem { return c.b.opt("ws", c.b.lit(" ")) }) }

func (c *compiler) sep() []elem { return seq(c.b.lit(","), c.ws()) }

func (c *compiler) char() elem {
	return c.once("char", func() elem {
		hex := c.b.class("0-9a-fA-F")
		esc := c.b.def("escape", seq(c.b.class(`"\/bfnrt`)), seq(c.b.lit("u"), hex, hex, hex, hex))
		return c.b.def("char", seq(c.b.class("^\"\\\x00-\x1f")), seq(c.b.lit(`\`), esc))
	})
}

func (c *compiler) str(min, max int) elem {
	name := fmt.Sprintf("string{%d,%d}", min, max)
	return c.once(name, func() elem {
		return c.b.def(name, seq(c.b.lit(`"`), c.b.repeat(name+"chars", c.char(), min, max), c.b.lit(`"`)))
	})
}

func (c *compiler) integer() elem {
	return c.once("integer", func() elem {
		digits := c.b.repeat("digits15", c.b.class("0-9"), 0, 15)
		return c.b.def("integer", seq(c.b.opt("minus", c.b.lit("-")), c.b.def("int", c.b.lit("0"), seq(c.b.class("1-9"), digits))))
	})
}

func (c *compiler) number() elem {
	return c.once("number", func() elem {
		d := c.b.class("0-9")
		frac := c.b.opt("frac", c.b.lit("."), c.b.repeat("fracdigits", d, 1, 15))
		exp := c.b.opt("exp", c.b.class("eE"), c.b.opt("sign", c.b.class("+-")), c.b.repeat("expdigits", d, 1, 3))
		return c.b.def("number", seq(c.integer(), frac, exp))
	})
}

// anyValue is any JSON value.
func (c *compiler) anyValue() elem {
	if e, ok := c.common["value"]; ok {
		return e
	}
	r := c.b.rule("value")
	c.common["value"] = ref(r)
	str := c.str(0, -1)
	c.b.define(r, seq(c.anyObject()), seq(c.anyArray()), seq(str), seq(c.number()),
		c.b.lit("true"), c.b.lit("false"), c.b.lit("null"))
	return ref(r)
}

func (c *compiler) anyObject() elem {
	if e, ok := c.common["object"]; ok {
		return e
	}
	r := c.b.rule("object")
	c.common["object"] = ref(r)
	member := c.b.def("member", seq(c.str(0, -1), c.b.lit(":"), c.ws(), c.anyValue()))
	more := c.b.repeat("members", c.b.def("nextmember", seq(c.sep(), member)), 0, -1)
	c.b.define(r, seq(c.b.lit("{"), c.b.opt("body", member, more), c.b.lit("}")))
	return ref(r)
}

func (c *compiler) anyArray() elem {
	if e, ok := c.common["array"]; ok {
		return e
	}
	r := c.b.rule("array")
	c.common["array"] = ref(r)
	c.b.define(r, seq(c.list("items", c.anyValue(), 0, -1)))
	return ref(r)
}

// list is "[" items "]" with min..max items (max < 0: any number).
func (c *compiler) list(name string, item elem, min, max int) []elem {
	if max == 0 {
		return c.b.lit("[]")
	}
	more := c.b.repeat(name+"more", c.b.def(name+"next", seq(c.sep(), item)), max0(min-1), maxOr(max-1))
	body := c.b.def(name+"body", seq(item, more))
	if min == 0 {
		body = c.b.opt(name+"opt", body)
	}
	return seq(c.b.lit("["), body, c.b.lit("]"))
}

func max0(n int) int { return max(n, 0) }

func maxOr(n int) int {
	if n < 0 {
		return -1
	}
	return n
}

// annotations are keywords that do not constrain the value.
var annotations = map[string]bool{"description": true, "title": true, "default": true, "examples": true,
	"$schema": true, "$id": true, "$comment": true, "deprecated": true, "readOnly": true, "writeOnly": true,
	"$defs": true, "definitions": true, "strict": true}

// handled are the keywords value enforces.
var handled = map[string]bool{"type": true, "properties": true, "required": true, "additionalProperties": true,
	"items": true, "minItems": true, "maxItems": true, "minLength": true, "maxLength": true, "enum": true,
	"const": true, "anyOf": true, "$ref": true}

func (c *compiler) value(s any, path string, depth int) (elem, error) {
	if depth > maxSchemaDepth {
		return elem{}, &SchemaError{path, fmt.Sprintf("nested deeper than %d levels", maxSchemaDepth)}
	}
	switch v := s.(type) {
	case bool:
		if v {
			return c.anyValue(), nil
		}
		return elem{}, &SchemaError{path, "false admits no value"}
	case *obj:
	default:
		return elem{}, &SchemaError{path, fmt.Sprintf("a schema is an object or a boolean, not %s", kind(s))}
	}
	o := s.(*obj)
	var bad []string
	for _, k := range o.keys {
		if !handled[k] && !annotations[k] {
			bad = append(bad, k)
		}
	}
	if len(bad) > 0 {
		return elem{}, &SchemaError{path, fmt.Sprintf("%s: not supported by the output grammar (supported: type, properties, required, additionalProperties, items, minItems, maxItems, minLength, maxLength, enum, const, anyOf, $ref)", strings.Join(bad, ", "))}
	}
	if r, ok := o.vals["$ref"]; ok {
		if len(o.keys) > 1 && hasConstraint(o, "$ref") {
			return elem{}, &SchemaError{path, "$ref next to other keywords is not supported"}
		}
		return c.ref(r, path, depth)
	}
	if e, ok := o.vals["const"]; ok {
		return c.literals([]any{e}, path+"/const")
	}
	if e, ok := o.vals["enum"]; ok {
		list, ok := e.([]any)
		if !ok || len(list) == 0 {
			return elem{}, &SchemaError{path + "/enum", "want a non-empty array"}
		}
		return c.literals(list, path+"/enum")
	}
	if a, ok := o.vals["anyOf"]; ok {
		list, ok := a.([]any)
		if !ok || len(list) == 0 {
			return elem{}, &SchemaError{path + "/anyOf", "want a non-empty array"}
		}
		if hasConstraint(o, "anyOf") {
			return elem{}, &SchemaError{path, "anyOf next to other constraints is not supported"}
		}
		var alts [][]elem
		for i, sub := range list {
			e, err := c.value(sub, fmt.Sprintf("%s/anyOf/%d", path, i), depth+1)
			if err != nil {
				return elem{}, err
			}
			alts = append(alts, []elem{e})
		}
		return c.b.def(path, alts...), nil
	}
	var types []string
	switch t := o.vals["type"].(type) {
	case nil:
		switch {
		case o.vals["properties"] != nil:
			types = []string{"object"}
		case o.vals["items"] != nil:
			types = []string{"array"}
		default:
			return c.anyValue(), nil
		}
	case string:
		types = []string{t}
	case []any:
		for _, x := range t {
			s, ok := x.(string)
			if !ok {
				return elem{}, &SchemaError{path + "/type", "want a string or an array of strings"}
			}
			types = append(types, s)
		}
	default:
		return elem{}, &SchemaError{path + "/type", "want a string or an array of strings"}
	}
	var alts [][]elem
	for _, t := range types {
		e, err := c.typed(o, t, path, depth)
		if err != nil {
			return elem{}, err
		}
		alts = append(alts, []elem{e})
	}
	if len(alts) == 1 {
		return alts[0][0], nil
	}
	return c.b.def(path, alts...), nil
}

// hasConstraint reports whether o has constraining keywords besides except.
func hasConstraint(o *obj, except string) bool {
	for _, k := range o.keys {
		if k != except && handled[k] {
			return true
		}
	}
	return false
}

func (c *compiler) ref(r any, path string, depth int) (elem, error) {
	name, ok := r.(string)
	if !ok {
		return elem{}, &SchemaError{path + "/$ref", "want a string"}
	}
	if id, ok := c.refs[name]; ok {
		return ref(id), nil
	}
	target := c.root
	if name != "#" {
		rest, ok := strings.CutPrefix(name, "#/")
		if !ok {
			return elem{}, &SchemaError{path + "/$ref", fmt.Sprintf("%q: only references inside the schema (#/...) are supported", name)}
		}
		for _, part := range strings.Split(rest, "/") {
			part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
			o, ok := target.(*obj)
			if !ok {
				return elem{}, &SchemaError{path + "/$ref", fmt.Sprintf("%q does not resolve", name)}
			}
			if target, ok = o.vals[part]; !ok {
				return elem{}, &SchemaError{path + "/$ref", fmt.Sprintf("%q does not resolve", name)}
			}
		}
	}
	id := c.b.rule("ref " + name)
	c.refs[name] = id
	e, err := c.value(target, name, depth+1)
	if err != nil {
		return elem{}, err
	}
	c.b.define(id, []elem{e})
	return ref(id), nil
}

// literals is one of the JSON values, written compactly.
func (c *compiler) literals(vals []any, path string) (elem, error) {
	var alts [][]elem
	for _, v := range vals {
		var buf bytes.Buffer
		if err := writeCompact(&buf, v); err != nil {
			return elem{}, &SchemaError{path, err.Error()}
		}
		alts = append(alts, c.b.lit(buf.String()))
	}
	return c.b.def(path, alts...), nil
}

// writeCompact writes a decoded value as compact JSON (objects in their order).
func writeCompact(w *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case *obj:
		w.WriteByte('{')
		for i, k := range x.keys {
			if i > 0 {
				w.WriteByte(',')
			}
			b, _ := json.Marshal(k)
			w.Write(b)
			w.WriteByte(':')
			if err := writeCompact(w, x.vals[k]); err != nil {
				return err
			}
		}
		w.WriteByte('}')
	case []any:
		w.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				w.WriteByte(',')
			}
			if err := writeCompact(w, e); err != nil {
				return err
			}
		}
		w.WriteByte(']')
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return err
		}
		w.Write(b)
	}
	return nil
}

func (c *compiler) typed(o *obj, t, path string, depth int) (elem, error) {
	bound := func(k string, def int) (int, error) {
		v, ok := o.vals[k]
		if !ok {
			return def, nil
		}
		n, ok := v.(json.Number)
		i, err := n.Int64()
		if !ok || err != nil || i < 0 || i > maxBound {
			return 0, &SchemaError{path + "/" + k, fmt.Sprintf("want an integer 0..%d", maxBound)}
		}
		return int(i), nil
	}
	switch t {
	case "string":
		lo, err := bound("minLength", 0)
		if err != nil {
			return elem{}, err
		}
		hi, err := bound("maxLength", -1)
		if err != nil {
			return elem{}, err
		}
		if hi >= 0 && hi < lo {
			return elem{}, &SchemaError{path, fmt.Sprintf("maxLength %d < minLength %d", hi, lo)}
		}
		return c.str(lo, hi), nil
	case "integer":
		return c.integer(), nil
	case "number":
		return c.number(), nil
	case "boolean":
		return c.b.def("boolean", c.b.lit("true"), c.b.lit("false")), nil
	case "null":
		return c.b.def("null", c.b.lit("null")), nil
	case "array":
		lo, err := bound("minItems", 0)
		if err != nil {
			return elem{}, err
		}
		hi, err := bound("maxItems", -1)
		if err != nil {
			return elem{}, err
		}
		if hi >= 0 && hi < lo {
			return elem{}, &SchemaError{path, fmt.Sprintf("maxItems %d < minItems %d", hi, lo)}
		}
		item := c.anyValue()
		if it, ok := o.vals["items"]; ok {
			if item, err = c.value(it, path+"/items", depth+1); err != nil {
				return elem{}, err
			}
		}
		return c.b.def(path+" array", c.list(path, item, lo, hi)), nil
	case "object":
		return c.object(o, path, depth)
	}
	return elem{}, &SchemaError{path + "/type", fmt.Sprintf("unknown type %q", t)}
}

func (c *compiler) object(o *obj, path string, depth int) (elem, error) {
	props, _ := o.vals["properties"].(*obj)
	if o.vals["properties"] != nil && props == nil {
		return elem{}, &SchemaError{path + "/properties", "want an object"}
	}
	required := map[string]bool{}
	if r, ok := o.vals["required"]; ok {
		list, ok := r.([]any)
		if !ok {
			return elem{}, &SchemaError{path + "/required", "want an array of names"}
		}
		for _, x := range list {
			name, ok := x.(string)
			if !ok {
				return elem{}, &SchemaError{path + "/required", "want an array of names"}
			}
			if props == nil || props.vals[name] == nil {
				return elem{}, &SchemaError{path + "/required", fmt.Sprintf("%q is required but not among the properties", name)}
			}
			required[name] = true
		}
	}
	if ap, ok := o.vals["additionalProperties"]; ok {
		if _, ok := ap.(bool); !ok {
			if _, ok := ap.(*obj); !ok {
				return elem{}, &SchemaError{path + "/additionalProperties", "want a boolean or a schema"}
			}
		}
	}
	if props == nil {
		if ap, ok := o.vals["additionalProperties"].(bool); ok && !ap {
			return c.b.def(path+" object", c.b.lit("{}")), nil
		}
		return c.anyObject(), nil
	}
	// Members in the declared order; an optional one may be left out. rest(i, first) is the
	// members from i on, first telling whether none has been written yet (no comma then).
	kv := make([]elem, len(props.keys))
	for i, k := range props.keys {
		v, err := c.value(props.vals[k], path+"/properties/"+k, depth+1)
		if err != nil {
			return elem{}, err
		}
		name, _ := json.Marshal(k)
		kv[i] = c.b.def(path+"/"+k+" member", seq(c.b.lit(string(name)), c.b.lit(":"), c.ws(), v))
	}
	n := len(kv)
	rest := make([][2]elem, n+1)
	empty := c.b.def(path+" end", nil)
	rest[n] = [2]elem{empty, empty}
	for i := n - 1; i >= 0; i-- {
		for f := 0; f < 2; f++ { // f == 1: nothing written yet
			var first []elem
			if f == 0 {
				first = c.sep()
			}
			alts := [][]elem{seq(first, kv[i], rest[i+1][0])}
			if !required[props.keys[i]] {
				alts = append(alts, []elem{rest[i+1][f]})
			}
			rest[i][f] = c.b.def(fmt.Sprintf("%s rest%d.%d", path, i, f), alts...)
		}
	}
	return c.b.def(path+" object", seq(c.b.lit("{"), rest[0][1], c.b.lit("}"))), nil
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%T", v)
}
