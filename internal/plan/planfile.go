package plan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/fsx"
	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/state"
)

// Save writes a plan file, readable only by its owner. Its sensitive
// values are hashed like in plan -json; the plain ones apply needs are
// sealed (encrypted) with key, and the whole file is authenticated with it
// (seal.go). A plan with errors cannot be saved.
func Save(path string, p *Plan, key []byte) error {
	if p.HasErrors() {
		return errors.New("a plan with errors cannot be saved")
	}
	j := p.ToJSON()
	if err := seal(j, p, key); err != nil {
		return err
	}
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	return fsx.WriteFile(path, append(b, '\n'), 0o600)
}

// maxPlanFile bounds what Load reads.
const maxPlanFile = 64 << 20

// Load reads a plan file written by Save with the same key. A file whose
// MAC does not verify (edited, or made with another state directory's key)
// is refused with ErrTampered.
func Load(path string, key []byte) (*Plan, error) {
	b, err := fsx.ReadFile(path, maxPlanFile)
	if err != nil {
		return nil, err
	}
	var head struct {
		FormatVersion string `json:"format_version"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("%s is not a roofline plan file: %v", path, err)
	}
	if head.FormatVersion != FormatVersion {
		return nil, fmt.Errorf("%s has plan format %q; this roofline reads %q. Run roofline plan -out again", path, head.FormatVersion, FormatVersion)
	}
	var j JSONPlan
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("%s is not a roofline plan file: %v", path, err)
	}
	plain, err := unseal(&j, key)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	p := FromJSON(&j)
	restorePlain(p, plain)
	return p, nil
}

// KeySource gives the plan key of the state directory plan files are made
// against (state.Filesystem.PlanKey).
type KeySource interface {
	PlanKey() ([]byte, error)
}

// ReadFile reads a plan file with its state directory's key: the file is
// verified before anything in it is believed (seal.go). show and apply
// read plan files this way.
func ReadFile(path string, keys KeySource) (*Plan, error) {
	key, err := keys.PlanKey()
	if err != nil {
		return nil, err
	}
	return Load(path, key)
}

// WriteFile saves p (Save) with its state directory's key (plan -out).
func WriteFile(path string, p *Plan, keys KeySource) error {
	key, err := keys.PlanKey()
	if err != nil {
		return err
	}
	return Save(path, p, key)
}

// Saved is what apply checks a plan file against before it carries it out.
type Saved struct {
	Keys  KeySource
	State *state.File // the state now, read under the lock
	// GPUs are the GPUs now; read only when the plan recorded them.
	GPUs    gpu.Inventory
	Config  *config.Config
	Engines EngineProber // probes the engines of Config (CurrentInstalls)
}

// Refused is why apply refuses a plan file that it read: a review plan, or
// a stale one. Its message is the one apply prints.
type Refused struct {
	Stale bool
	Err   error
}

func (e *Refused) Error() string {
	if e.Stale {
		return "Saved plan is stale\n\n" + e.Err.Error() + "."
	}
	return e.Err.Error() + "."
}

func (e *Refused) Unwrap() error { return e.Err }

// OpenSaved reads the plan file at path (ReadFile) and refuses it unless it
// can be applied now: not a review plan (CheckApplicable), not stale
// (CheckSaved, against s's state, GPUs, engines and models). The plan's
// Snapshot is the GPUs now, when it recorded them (the journal names them).
func OpenSaved(ctx context.Context, path string, s Saved) (*Plan, error) {
	p, err := ReadFile(path, s.Keys)
	if err != nil {
		return nil, err
	}
	if err := p.CheckApplicable(path); err != nil {
		return nil, &Refused{Err: err}
	}
	fp := ""
	if p.InventoryFingerprint != "" {
		snap, err := s.GPUs.Snapshot(ctx)
		if err != nil {
			return nil, fmt.Errorf("cannot check the GPUs against the saved plan: %w", err)
		}
		fp = snap.Fingerprint()
		p.Snapshot = snap
	}
	installs := func() (map[string]string, map[string]string) {
		return CurrentInstalls(ctx, s.Config, s.Engines)
	}
	if err := CheckSaved(p, s.State, fp, installs); err != nil {
		return nil, &Refused{Stale: true, Err: err}
	}
	return p, nil
}

// ErrStale is returned by CheckFresh.
var ErrStale = errors.New("stale plan")

// CheckFresh refuses a saved plan when the state or the GPUs changed since it
// was made: applying it would act on a world it did not see.
func CheckFresh(p *Plan, current *state.File, inventoryFingerprint string) error {
	if current == nil {
		current = state.NewFile()
	}
	if current.Lineage != p.Lineage && p.Lineage != "" {
		return fmt.Errorf("%w: the plan was made for state lineage %s, but the state is lineage %s. Run roofline plan again", ErrStale, p.Lineage, current.Lineage)
	}
	if current.Serial != p.PriorSerial || (p.Lineage == "" && current.Lineage != "") {
		return fmt.Errorf("%w: the state changed since the plan was made (serial %d, now %d). Run roofline plan again", ErrStale, p.PriorSerial, current.Serial)
	}
	if inventoryFingerprint != "" && p.InventoryFingerprint != "" && inventoryFingerprint != p.InventoryFingerprint {
		return fmt.Errorf("%w: the GPUs changed since the plan was made (memory in use or processes differ). Run roofline plan again", ErrStale)
	}
	return nil
}

// CheckInstalls refuses a saved plan when an engine install or a model
// folder it was made with changed since (an in-place pip upgrade, a
// re-downloaded model): installs and models are the current identities,
// as the plan records them (InstallIDs, model fingerprints).
func CheckInstalls(p *Plan, installs, models map[string]string) error {
	for _, name := range slices.Sorted(maps.Keys(p.Installs)) {
		if now, ok := installs[name]; ok && now != p.Installs[name] {
			return fmt.Errorf("%w: engine %q changed since the plan was made (another install or flag list). Run roofline plan again", ErrStale, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(p.Models)) {
		if now, ok := models[name]; ok && now != p.Models[name] {
			return fmt.Errorf("%w: the files of model %q changed since the plan was made. Run roofline plan again", ErrStale, name)
		}
	}
	return nil
}

// CheckApplicable refuses a review plan: made from a recorded GPU
// inventory for reading in code review, it was never checked against the
// host, so it cannot be applied.
func (p *Plan) CheckApplicable(path string) error {
	if p.Review {
		return fmt.Errorf("%s is a review plan\n\nIt was made from a recorded GPU inventory, for reading in code review; it cannot be applied. Run roofline plan -out=FILE on the GPU host, without -inventory, and apply that", path)
	}
	return nil
}

// CheckSaved refuses a saved plan that is stale: the state or the GPUs
// changed (CheckFresh), else an engine install or model folder did
// (CheckInstalls; installs is called only then, since it probes).
func CheckSaved(p *Plan, current *state.File, inventoryFingerprint string, installs func() (installs, models map[string]string)) error {
	if err := CheckFresh(p, current, inventoryFingerprint); err != nil {
		return err
	}
	i, m := installs()
	return CheckInstalls(p, i, m)
}

// SensitiveValues lists the plain values at the sensitive paths of every
// change's desired server (for masking output against them).
func (p *Plan) SensitiveValues() []string {
	var out []string
	for _, c := range p.Changes {
		if c.After != nil {
			out = append(out, SensitiveValues(c.After)...)
		}
	}
	return out
}

// CurrentInstalls is what CheckInstalls compares a saved plan with: every
// engine of cfg probed (through engines, which caches) and every model
// folder fingerprinted, as the plan records them. An engine or model that
// cannot be read now is left out.
func CurrentInstalls(ctx context.Context, cfg *config.Config, engines EngineProber) (installs, models map[string]string) {
	in := map[string]EngineResult{}
	for name, e := range cfg.Engines {
		if inst, err := engines.Probe(ctx, e); err == nil {
			in[name] = EngineResult{Installed: inst}
		}
	}
	models = map[string]string{}
	for name, m := range cfg.Models {
		if files, err := ModelManifest(m.Path); err == nil {
			models[name] = ManifestFingerprint(files)
		}
	}
	return InstallIDs(cfg, in), models
}
