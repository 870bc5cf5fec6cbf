package views

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/roofline/roofline/internal/journal"
	"github.com/roofline/roofline/internal/jsonfill"
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
	jsonfill.Fill(reflect.ValueOf(&s).Elem(), 2)
	// The gates' reports as the gates write them, every field set.
	for x := &s; x != nil; x = x.Deposed {
		if x.Gate != nil {
			x.Gate.Health, x.Gate.Smoke, x.Gate.Bench = filledReports(t)
		}
	}
	f.Set(&s)
	want, _ := json.MarshalIndent(f, "", "  ")
	got, _ := json.MarshalIndent(StateDocumentOf(f), "", "  ")
	for _, k := range []string{`"launch_id"`, `"deposed"`, `"proxy"`, `"health"`, `"elapsed_ms"`, `"steps"`, `"p99_itl_ms"`, `"files"`, `"footprint"`} {
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
	jsonfill.Fill(reflect.ValueOf(&e).Elem(), 2)
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
