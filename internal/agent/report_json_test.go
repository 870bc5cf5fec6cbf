package agent

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/roofline/roofline/internal/journal"
)

// TestBenchFiguresKeepEveryField: the report's bench figures carry every
// field of the journal's summary under the same name, so that converting
// changes nothing in check -json; a field added to the journal fails here
// until the report decides about it.
func TestBenchFiguresKeepEveryField(t *testing.T) {
	var b journal.BenchSummary
	v := reflect.ValueOf(&b).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("x")
		case reflect.Int:
			f.SetInt(int64(i + 1))
		case reflect.Float64:
			f.SetFloat(float64(i) + 0.5)
		case reflect.Pointer: // *bool
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.Slice: // []string
			f.Set(reflect.ValueOf([]string{"v"}))
		default:
			t.Fatalf("journal.BenchSummary.%s has a kind this test does not fill: %s", v.Type().Field(i).Name, f.Kind())
		}
	}
	want, _ := json.Marshal(&b)
	got, _ := json.Marshal(benchFigures(&b))
	if !bytes.Equal(got, want) {
		t.Errorf("check -json's bench differs from the journal's:\n got %s\nwant %s", got, want)
	}
}
