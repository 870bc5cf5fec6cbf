package views

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/journal"
	"github.com/roofline/roofline/internal/state"
)

// TestStateDocumentMatchesTheStateFile: with every field of the state set,
// show -json prints what the state file stores, byte for byte (format 2),
// through its own types. A field added to the state fails here until the
// document decides about it (and bumps StateFormatVersion if it adds it).
func TestStateDocumentMatchesTheStateFile(t *testing.T) {
	f := state.NewFile()
	f.Serial, f.Lineage, f.RooflineVersion = 7, "lin", "0.1.0"
	var s state.Server
	fillAll(reflect.ValueOf(&s).Elem(), 0)
	f.Set(&s)
	want, _ := json.MarshalIndent(f, "", "  ")
	got, _ := json.MarshalIndent(StateDocumentOf(f), "", "  ")
	for _, k := range []string{`"launch_id"`, `"deposed"`, `"proxy"`, `"health"`, `"files"`, `"footprint"`} {
		if !bytes.Contains(want, []byte(k)) {
			t.Fatalf("the filler left %s unset:\n%s", k, want)
		}
	}
	if !bytes.Equal(got, want) {
		t.Errorf("show -json differs from the state file:\n got %s\nwant %s", got, want)
	}
	if f.FormatVersion != StateFormatVersion {
		t.Logf("the state file is format %d, its document %d", f.FormatVersion, StateFormatVersion)
	}
}

// TestJournalDocumentMatchesTheJournal: journal -json prints each entry as
// the journal stores it, through its own types.
func TestJournalDocumentMatchesTheJournal(t *testing.T) {
	var e journal.Entry
	fillAll(reflect.ValueOf(&e).Elem(), 0)
	for _, k := range []string{`"bench"`, `"agent"`, `"failure"`, `"p99_ttft_ms"`} {
		if b, _ := json.Marshal(&e); !bytes.Contains(b, []byte(k)) {
			t.Fatalf("the filler left %s unset: %s", k, b)
		}
	}
	want, _ := json.MarshalIndent([]journal.Entry{e}, "", "  ")
	got, _ := json.MarshalIndent(JournalDocumentOf([]journal.Entry{e}), "", "  ")
	if !bytes.Equal(got, want) {
		t.Errorf("journal -json differs from the journal:\n got %s\nwant %s", got, want)
	}
	if b, _ := json.Marshal(JournalDocumentOf(nil)); string(b) != "[]" {
		t.Errorf("no entries: %s, want []", b)
	}
}

// fillAll sets every exported field JSON writes to a non-zero value; depth
// bounds recursive types (a server's deposed server).
func fillAll(v reflect.Value, depth int) {
	switch v.Interface().(type) {
	case time.Time:
		v.Set(reflect.ValueOf(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)))
		return
	case json.RawMessage:
		v.Set(reflect.ValueOf(json.RawMessage(`{"ok":true}`)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Pointer:
		if depth > 2 {
			return
		}
		p := reflect.New(v.Type().Elem())
		fillAll(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fillAll(s.Index(0), depth)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		e := reflect.New(v.Type().Elem()).Elem()
		fillAll(e, depth)
		m.SetMapIndex(reflect.ValueOf("k").Convert(v.Type().Key()), e)
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() && f.Tag.Get("json") != "-" {
				fillAll(v.Field(i), depth)
			}
		}
	}
}
