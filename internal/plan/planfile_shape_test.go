package plan

import (
	"encoding"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// A plan file (plan -out) is the planner's records as they are (JSONPlan),
// made of state, vram, journal and diagfmt structs: a change to any of them
// changes what apply reads back, and apply knows a file only by its
// format_version. TestPlanFileShape ties the two: the golden records the
// shape of the file (every JSON name and kind, recursively) with the
// FormatVersion it was made under, and fails when the shape moves and the
// version does not.
const shapeGolden = "testdata/planfile-shape.txt"

func TestPlanFileShape(t *testing.T) {
	shape := planFileShape(reflect.TypeFor[JSONPlan]())
	got := "format_version " + FormatVersion + "\n\n" + shape
	if *update {
		if err := os.WriteFile(shapeGolden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(shapeGolden)
	if err != nil {
		t.Fatalf("%v (go test ./internal/plan -run TestPlanFileShape -update writes it)", err)
	}
	head, wantShape, _ := strings.Cut(string(b), "\n\n")
	wantVersion := strings.TrimPrefix(head, "format_version ")
	switch {
	case shape != wantShape && wantVersion == FormatVersion:
		t.Errorf("the plan file's shape changed but plan.FormatVersion is still %q.\n"+
			"A plan file written by the previous roofline would be read with the new meaning (or a saved plan "+
			"lose a field on the way to apply): bump FormatVersion in internal/plan/plan.go (apply then refuses "+
			"older files: \"run roofline plan -out again\"), note it in docs/json.md, and rewrite %s with "+
			"go test ./internal/plan -run TestPlanFileShape -update.\nThe change:\n%s",
			FormatVersion, shapeGolden, shapeDiff(wantShape, shape))
	case shape != wantShape || wantVersion != FormatVersion:
		t.Errorf("%s is stale (it records format %q; FormatVersion is %q): rewrite it with "+
			"go test ./internal/plan -run TestPlanFileShape -update.\n%s", shapeGolden, wantVersion, FormatVersion, shapeDiff(wantShape, shape))
	}
}

// TestPlanFileShapeSees checks the walker on what it must notice: a field
// renamed, retyped, added deep inside a nested struct, and nothing else.
func TestPlanFileShapeSees(t *testing.T) {
	type inner struct {
		A string `json:"a"`
	}
	type base struct {
		In   []*inner          `json:"in"`
		M    map[string]inner  `json:"m,omitempty"`
		Skip func()            `json:"-"`
		Any  map[string]any    `json:"any"`
		Raw  json.RawMessage   `json:"raw"`
		Opt  *struct{ B bool } `json:"opt,omitempty"`
	}
	type renamed struct {
		In []*struct {
			A string `json:"a2"`
		} `json:"in"`
	}
	type retyped struct {
		In []*struct {
			A int `json:"a"`
		} `json:"in"`
	}
	type omitted struct {
		In []*inner `json:"in,omitempty"`
	}
	type same struct {
		In []*inner `json:"in,omitempty"`
	}
	s := planFileShape(reflect.TypeFor[base]())
	for _, want := range []string{"in []*{in[]}", "{in[]}\n  a string", "m map[string]{in[]}", "any map[string]any", "raw json.RawMessage", "opt *{opt}", "B bool"} {
		if !strings.Contains(s, want) {
			t.Errorf("the shape lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "Skip") || strings.Contains(s, "priv") {
		t.Errorf("the shape has a field JSON never writes:\n%s", s)
	}
	o := planFileShape(reflect.TypeFor[omitted]())
	for _, other := range []reflect.Type{reflect.TypeFor[renamed](), reflect.TypeFor[retyped]()} {
		if planFileShape(other) == o {
			t.Errorf("%v has the same shape as %v", other, reflect.TypeFor[omitted]())
		}
	}
	if planFileShape(reflect.TypeFor[same]()) != o {
		t.Error("omitempty changes the shape; it changes no reader")
	}
}

// planFileShape describes the JSON shape of t: each struct once, in the
// order first met, named by the JSON path where it was first met
// ("resource_changes[].before"; a type met again is named by that path),
// with its fields' JSON names and kinds. Go's type names are left out: a
// renamed type changes no file. Types with their own JSON encoding
// (time.Time, json.RawMessage) are named, not opened.
func planFileShape(t reflect.Type) string {
	var (
		names = map[reflect.Type]string{}
		queue []reflect.Type
	)
	var kind func(t reflect.Type, path string) string
	kind = func(t reflect.Type, path string) string {
		if ownJSON(t) {
			return t.String()
		}
		switch t.Kind() {
		case reflect.Pointer:
			return "*" + kind(t.Elem(), path)
		case reflect.Slice:
			if t.Elem().Kind() == reflect.Uint8 {
				return "bytes"
			}
			return "[]" + kind(t.Elem(), path+"[]")
		case reflect.Array:
			return fmt.Sprintf("[%d]", t.Len()) + kind(t.Elem(), path+"[]")
		case reflect.Map:
			return "map[" + kind(t.Key(), path+".key") + "]" + kind(t.Elem(), path+".*")
		case reflect.Interface:
			return "any"
		case reflect.Struct:
			if _, ok := names[t]; !ok {
				names[t] = "{" + strings.TrimPrefix(path, ".") + "}"
				queue = append(queue, t)
			}
			return names[t]
		}
		return t.Kind().String()
	}
	var fields func(t reflect.Type, path string, w *strings.Builder)
	fields = func(t reflect.Type, path string, w *strings.Builder) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" || !f.IsExported() && !f.Anonymous {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			ft := f.Type
			if f.Anonymous && name == "" {
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct && !ownJSON(ft) {
					fields(ft, path, w) // encoding/json lifts an embedded struct's fields
					continue
				}
			}
			if name == "" {
				name = f.Name
			}
			fmt.Fprintf(w, "  %s %s\n", name, kind(f.Type, path+"."+name))
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "root %s\n", kind(t, ""))
	for len(queue) > 0 {
		st := queue[0]
		queue = queue[1:]
		var w strings.Builder
		fields(st, strings.Trim(names[st], "{}"), &w)
		fmt.Fprintf(&out, "\n%s\n%s", names[st], w.String())
	}
	return out.String()
}

var (
	marshaler     = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// ownJSON: a type that writes its own JSON (time.Time, json.RawMessage),
// which the walker names rather than opens.
func ownJSON(t reflect.Type) bool {
	for _, x := range []reflect.Type{t, reflect.PointerTo(t)} {
		if x.Implements(marshaler) || x.Implements(textMarshaler) {
			return true
		}
	}
	return false
}

// shapeDiff lists the lines only in want (-) or only in got (+), per type.
func shapeDiff(want, got string) string {
	section := func(s string) map[string][]string {
		m := map[string][]string{}
		for _, block := range strings.Split(strings.TrimSpace(s), "\n\n") {
			lines := strings.Split(block, "\n")
			m[lines[0]] = lines[1:]
		}
		return m
	}
	w, g := section(want), section(got)
	var keys []string
	for k := range w {
		keys = append(keys, k)
	}
	for k := range g {
		if _, ok := w[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		var lines []string
		for _, l := range w[k] {
			if !slices.Contains(g[k], l) {
				lines = append(lines, "  - "+strings.TrimSpace(l))
			}
		}
		for _, l := range g[k] {
			if !slices.Contains(w[k], l) {
				lines = append(lines, "  + "+strings.TrimSpace(l))
			}
		}
		if len(lines) > 0 {
			fmt.Fprintf(&b, "%s\n%s\n", k, strings.Join(lines, "\n"))
		}
	}
	return b.String()
}

// TestPlanFileHoldsNoSecretField: every field of the plan file whose JSON
// name says it could hold a secret is one that holds a hash, a reference
// or the sealed (encrypted) values; a new one fails here until someone
// decides how it is kept out (docs/security.md). The values themselves are
// checked by TestSecretsAreMaskedInPlanTextJSONAndFile and
// TestAPIKeyRotationAndPlanFile.
func TestPlanFileHoldsNoSecretField(t *testing.T) {
	// A word of the name (snake_case or Go's CamelCase) says secret.
	secretWord := regexp.MustCompile(`(?i)^(api_?key|key|token|secret|secrets|password|passwd|pass|credentials?|auth|authorization|bearer|cert|private)$`)
	words := regexp.MustCompile(`[A-Z]?[a-z0-9]+|[A-Z]+`)
	secretName := func(name string) bool {
		for _, w := range words.FindAllString(name, -1) {
			if secretWord.MatchString(w) {
				return true
			}
		}
		return false
	}
	safe := map[string]string{
		"api_key_hash":           "a salted hash of the key (state.Server)",
		"api_key":                "a bool: clients must send a key (Desired.Keyed)",
		"api_key_file":           "the path the key is read from at apply",
		"sealed_secrets":         "the plain values apply needs, encrypted with the state directory's key (seal.go)",
		"key":                    "a calibration key or an env change's variable name",
		"kv_bytes_per_token":     "a size",
		"total_token_throughput": "a rate",
	}
	shape := planFileShape(reflect.TypeFor[JSONPlan]())
	field := regexp.MustCompile(`(?m)^  (\S+) (.+)$`)
	seen := map[string]bool{}
	for _, m := range field.FindAllStringSubmatch(shape, -1) {
		name := m[1]
		if !secretName(name) || seen[name] {
			continue
		}
		seen[name] = true
		if _, ok := safe[name]; !ok {
			t.Errorf("the plan file has a field %q (%s): if it can hold a secret, hash or seal it like api_key_hash or sealed_secrets; then list it here", name, m[2])
		}
	}
	if !seen["sealed_secrets"] || !seen["api_key_hash"] {
		t.Fatalf("the walker missed sealed_secrets or api_key_hash:\n%s", shape)
	}
}
