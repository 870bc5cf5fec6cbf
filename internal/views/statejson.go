package views

import (
	"github.com/roofline/roofline/internal/jsonplan"
	"github.com/roofline/roofline/internal/plan"
	"github.com/roofline/roofline/internal/state"
)

// StateFormatVersion is the version of the state's JSON documents (show
// -json without a plan file, state list -json): the state file format
// they were modelled on (3: claim_bytes and proxy_limits). They have their
// own types since, so the state file can change without them; a change to
// these types bumps this.
const StateFormatVersion = 3

// StateDocument is show -json of the state: every server as the plan
// document's "before" shows it (secret values as salted hashes).
type StateDocument struct {
	FormatVersion   int                              `json:"format_version"`
	Serial          uint64                           `json:"serial"`
	Lineage         string                           `json:"lineage"`
	RooflineVersion string                           `json:"roofline_version"`
	Servers         map[string]*jsonplan.StateServer `json:"servers"`
}

// StateDocumentOf converts the state file's records.
func StateDocumentOf(f *state.File) StateDocument {
	d := StateDocument{FormatVersion: StateFormatVersion, Serial: f.Serial, Lineage: f.Lineage, RooflineVersion: f.RooflineVersion,
		Servers: map[string]*jsonplan.StateServer{}}
	if f.Servers == nil {
		d.Servers = nil
	}
	for name, s := range f.Servers {
		d.Servers[name] = plan.StateServerDocument(s)
	}
	return d
}
