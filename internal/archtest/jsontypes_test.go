package archtest

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/agent"
	"github.com/roofline/roofline/internal/jsonplan"
	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/views"
)

// documents are the JSON documents roofline prints, each with the packages
// whose types may appear in it: its own, and shared JSON shapes that are
// versioned with it (diagfmt: Terraform's diagnostic JSON). A state, plan,
// config, vram or journal struct in one of them would change the document
// whenever that struct changes, without its format_version saying so
// (docs/json.md).
var documents = []struct {
	name string
	typ  reflect.Type
	own  []string
	// anyOK are the fields that may hold any JSON (an interface, a
	// json.RawMessage, a map of them) because the document means it:
	// TYPE.FIELD.
	anyOK []string
}{
	{"the plan document (plan -json, show -json)", reflect.TypeFor[jsonplan.Plan](), []string{"internal/jsonplan"}, nil},
	// Terraform's resource_key: a string, a number or null.
	{"check -json", reflect.TypeFor[agent.Report](), []string{"internal/agent", "internal/jsonplan"}, nil},
	{"show -json of the state", reflect.TypeFor[views.StateDocument](), []string{"internal/views", "internal/jsonplan"}, nil},
	{"journal -json", reflect.TypeFor[[]jsonplan.JournalEntry](), []string{"internal/jsonplan"}, nil},
	{"status -json", reflect.TypeFor[[]views.StatusRow](), []string{"internal/views"}, nil},
	{"health -json", reflect.TypeFor[jsonplan.HealthReport](), []string{"internal/jsonplan"}, nil},
	{"smoke -json", reflect.TypeFor[jsonplan.SmokeReport](), []string{"internal/jsonplan"}, nil},
	{"bench -json", reflect.TypeFor[views.BenchReport](), []string{"internal/views"}, nil},
	{"bench -json of two servers", reflect.TypeFor[views.BenchComparison](), []string{"internal/views"}, nil},
	// rope_scaling is config.json's own object, printed as it is there.
	{"model inspect -json", reflect.TypeFor[views.ModelInspectDocument](), []string{"internal/views"}, []string{"ModelConfig.RopeScaling"}},
	{"model verify -json", reflect.TypeFor[views.ModelVerifyDocument](), []string{"internal/views"}, nil},
	{"vram -json", reflect.TypeFor[views.VRAMDocument](), []string{"internal/views", "internal/jsonplan"}, nil},
	{"validate -json", reflect.TypeFor[views.ValidateDocument](), []string{"internal/views", "internal/diagfmt"}, nil},
	{"diagnose -json", reflect.TypeFor[views.DiagnoseDocument](), []string{"internal/views"}, nil},
	{"flags -json", reflect.TypeFor[[]views.FlagDocument](), []string{"internal/views"}, nil},
	{"state list -json", reflect.TypeFor[views.StateListDocument](), []string{"internal/views", "internal/jsonplan"}, nil},
	{"the stream (plan -json, apply -json)", reflect.TypeFor[views.Message](), []string{"internal/views", "internal/jsonplan", "internal/diagfmt"}, []string{"Resource.ResourceKey"}},
}

func TestJSONDocumentsOwnTypes(t *testing.T) {
	for _, d := range documents {
		for _, leak := range foreignTypes(d.typ, d.own, d.anyOK) {
			t.Errorf("%s: %s (declare the field's type in the document's package and convert to it)", d.name, leak)
		}
	}
}

// TestForeignTypesFindsLeaks plants what TestJSONDocumentsOwnTypes must
// catch: an internal struct as a field, embedded, behind a pointer, in a
// slice or map, and a field that can hold anything.
func TestForeignTypesFindsLeaks(t *testing.T) {
	type (
		field    struct{ S state.Server }
		embedded struct{ state.Footprint }
		nested   struct {
			Ok  []map[string]*struct{ F *state.Footprint }
			Raw json.RawMessage
			At  time.Time
		}
		anything struct{ V any }
		// The gates' reports once rode in the plan document this way.
		raw   struct{ Health json.RawMessage }
		rawIn struct{ M map[string][]json.RawMessage }
		clean struct {
			A []string
			B map[string]int
			C *struct{ D [2]int }
			E time.Duration
		}
	)
	own := []string{"internal/archtest"}
	for _, c := range []struct {
		typ  reflect.Type
		want string
	}{
		{reflect.TypeFor[field](), "state.Server"},
		{reflect.TypeFor[embedded](), "state.Footprint"},
		{reflect.TypeFor[nested](), "state.Footprint"},
		{reflect.TypeFor[anything](), "interface"},
		{reflect.TypeFor[raw](), "json.RawMessage"},
		{reflect.TypeFor[rawIn](), "json.RawMessage"},
		{reflect.TypeFor[clean](), ""},
	} {
		got := foreignTypes(c.typ, own, nil)
		switch {
		case c.want == "" && len(got) > 0:
			t.Errorf("%v: reported %q, want nothing", c.typ, got)
		case c.want != "" && !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, c.want) }):
			t.Errorf("%v: reported %q, want %s", c.typ, got, c.want)
		}
	}
}

// foreignTypes lists the fields reachable from typ whose type is declared in
// a roofline package other than own, and the fields that may hold anything
// (an interface, a json.RawMessage: another package's struct, marshalled)
// other than anyOK. The standard library's other types are allowed.
func foreignTypes(typ reflect.Type, own, anyOK []string) []string {
	var out []string
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type, path string)
	walk = func(t reflect.Type, path string) {
		if seen[t] {
			return
		}
		seen[t] = true
		if pkg := t.PkgPath(); strings.HasPrefix(pkg, module) {
			if rel := strings.TrimPrefix(pkg, module); !slices.Contains(own, rel) {
				out = append(out, path+": "+t.String())
				return
			}
		} else if t == rawMessage {
			out = append(out, path+": json.RawMessage (any JSON: give it a type of the document's own)")
			return
		} else if pkg != "" {
			return // the standard library (time.Time, time.Duration)
		}
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array:
			walk(t.Elem(), path)
		case reflect.Map:
			walk(t.Key(), path)
			walk(t.Elem(), path)
		case reflect.Interface:
			if t.String() != "error" {
				out = append(out, path+": interface "+t.String())
			}
		case reflect.Struct:
			for i := range t.NumField() {
				f := t.Field(i)
				if f.Tag.Get("json") == "-" || !f.IsExported() && !f.Anonymous ||
					holdsAnything(f.Type) && slices.Contains(anyOK, t.Name()+"."+f.Name) {
					continue
				}
				walk(f.Type, path+"."+f.Name)
			}
		}
	}
	walk(typ, typ.Name())
	return out
}

var rawMessage = reflect.TypeFor[json.RawMessage]()

// holdsAnything: an interface, a json.RawMessage, or a slice or map of them.
func holdsAnything(t reflect.Type) bool {
	switch {
	case t == rawMessage || t.Kind() == reflect.Interface:
		return true
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Map:
		return holdsAnything(t.Elem())
	}
	return false
}
