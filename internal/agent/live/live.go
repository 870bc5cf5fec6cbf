// Package live carries out the agent's actions on this host through
// roofline's own layers: refresh's observer (plan.LiveObserver), the
// health gate, and restarts and rollback-window ends planned and applied
// the way roofline apply would, under the state lock. Package agent stays
// below plan and apply and decides when; this package decides how. The CLI
// builds a Host with the pieces only it constructs (the configuration
// loader, the refresh adapters, apply's drivers and gates).
package live

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/roofline/roofline/internal/agent"
	"github.com/roofline/roofline/internal/apply"
	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/gate"
	"github.com/roofline/roofline/internal/plan"
	"github.com/roofline/roofline/internal/secret"
	"github.com/roofline/roofline/internal/snapshot"
	"github.com/roofline/roofline/internal/state"
)

// Observer adapts refresh's observer to the agent.
type Observer struct{ O *plan.LiveObserver }

// Observe implements agent.Observer.
func (a Observer) Observe(ctx context.Context, s *state.Server) agent.Observation {
	o := a.O.Observe(ctx, s)
	return agent.Observation{Alive: o.Alive, ProxyGone: o.ProxyGone, Healthy: o.Healthy, Detail: o.Detail}
}

// States is the state of the host: read, and locked for a change.
type States interface {
	Read() (*state.File, error)
	Lock(ctx context.Context, info *state.LockInfo) (string, error)
	Unlock(id string) error
}

// Host restarts servers the way apply would: under the state lock, from a
// fresh plan of the configuration restricted to them, through apply's
// driver, health gate and gates. It refuses to start a server whose
// configuration changed since the last apply: that is apply's job. It also
// ends rollback windows (Retire) and runs the one-shot health gate
// (Generate), and writes the host snapshot (Snapshot). Generate needs only
// Load and Secrets.
type Host struct {
	States States
	// Load loads the configuration as it is now (the state never holds
	// an API key) and notes its secrets in the output mask; its error
	// says why it does not load.
	Load func() (*config.Config, error)
	// Refresh observes what runs for a plan of cfg (plan's refresh with
	// this host's live adapters).
	Refresh func(ctx context.Context, cfg *config.Config, st *state.File) *plan.Inputs
	// Applier is a fresh applier of this host, without a journal.
	Applier func() *apply.Applier
	// Journal is the journal file the rollouts of a restart are recorded
	// in (those that went through; a failed restart is in the agent's
	// report); a rollback window's end is no rollout.
	Journal string
	// Take records what refresh finds on this host for cfg (the host
	// snapshot of roofline snapshot).
	Take func(ctx context.Context, cfg *config.Config, st *state.File) *snapshot.File
	// ReadHostFile and Getenv read a server's host secrets (env_from_file,
	// env_from_host, api_key_file) as apply does: a restarted engine gets
	// them again.
	ReadHostFile func(path string) (string, error)
	Getenv       func(name string) (string, bool)
	// Secrets is the output mask; API keys read from files are added.
	Secrets *secret.Set
	Logf    func(string, ...any)
}

// apiKey is the key of server name in the configuration as it is now:
// "" for a server without one.
func (h *Host) apiKey(name string) (string, error) {
	cfg, err := h.Load()
	if err != nil {
		return "", fmt.Errorf("the configuration does not load, so the API key is unknown: %v", err)
	}
	cs := cfg.Servers[name]
	if cs == nil {
		return "", nil
	}
	k, err := apply.APIKey(&plan.Desired{Keyed: cs.APIKey != "" || cs.APIKeyFile != "", APIKey: cs.APIKey, APIKeyFile: cs.APIKeyFile})
	h.Secrets.Add(k)
	return k, err
}

// Generate implements agent.Generator: the health gate (models, a tiny
// streamed generation, /metrics) against a ready server, as apply runs it
// before promoting one, with the server's API key.
func (h *Host) Generate(ctx context.Context, s *state.Server) error {
	key, err := h.apiKey(s.Name)
	if err != nil {
		return err
	}
	return gate.Serves(ctx, gate.Target{BaseURL: gate.LocalURL(s.Host, s.Port), Model: s.Model.ServedName, Engine: s.Engine.Kind, APIKey: key})
}

// Snapshot writes the agent's /snapshot: the host snapshot, taken with
// the configuration as it is now (its servers on this host), so that CI
// can fetch it for plan -review -snapshot.
func (h *Host) Snapshot(ctx context.Context, w io.Writer) error {
	st, err := h.States.Read()
	if err != nil {
		return err
	}
	cfg, err := h.Load()
	if err != nil {
		return fmt.Errorf("the configuration does not load: %v", err)
	}
	return h.Take(ctx, cfg.HostOnly(), st).Write(w)
}

// Restart implements agent.Restarter.
func (h *Host) Restart(ctx context.Context, reqs []agent.Request) []agent.Outcome {
	rs := agent.Pending(reqs)
	id, err := h.States.Lock(ctx, state.NewLockInfo("agent restart"))
	if err != nil {
		return rs.FailAll(err, "")
	}
	defer func() {
		if err := h.States.Unlock(id); err != nil {
			h.Logf("releasing the state lock: %v", err)
		}
	}()
	st, err := h.States.Read()
	if err != nil {
		return rs.FailAll(err, "")
	}
	// Instances an interrupted run started but never recorded are
	// recorded by apply, first thing.
	cfg, err := h.Load()
	if err != nil {
		return rs.FailAll(fmt.Errorf("the configuration does not load: %v", err), "config")
	}
	cfg = cfg.HostOnly() // a cluster's servers are not this host's to restart
	rs.Triage(reqs, st, func(name string) bool { return cfg.Servers[name] != nil })
	if len(rs.Targets) == 0 {
		return rs.Outs
	}
	in := h.Refresh(ctx, cfg, st)
	in.Mode, in.Targets, in.Replace = plan.ModeNormal, append(slices.Clone(rs.Targets), rs.Kept...), rs.Replace
	in.ReadHostFile, in.Getenv = h.ReadHostFile, h.Getenv
	p := plan.Make(in)
	h.Secrets.Add(p.Secrets.Values()...)
	if p.HasErrors() {
		return rs.FailAll(errors.New("the plan to restart has errors: "+p.ErrorsText()), "plan")
	}
	keep, skipped := p.Restarts(rs.Targets, rs.Kept)
	for name, sk := range skipped {
		if o := rs.Out(name); o != nil {
			o.Skipped, o.Lasting = sk.Reason, sk.Lasting
		}
	}
	if len(keep) == 0 {
		return rs.Outs
	}
	// Host secrets are read now, as apply reads them: the engine starts
	// with them or not at all.
	if err := plan.ResolveHostEnv(p, h.ReadHostFile, h.Getenv, h.Secrets); err != nil {
		return rs.FailAll(err, "secrets")
	}
	ap := h.Applier()
	ap.Journal = h.Journal
	after, err := ap.Apply(ctx, p, st)
	failed, other := apply.ServerErrors(err)
	for _, name := range keep {
		o := rs.Out(name)
		switch se := failed[name]; {
		case se != nil:
			o.Failed(se, se.Phase, se.Err, se.Diagnosis)
		case len(other) > 0:
			o.Err = errors.New(strings.Join(other, "; "))
		default:
			o.Restarted = true
			if s := after.Server(name); s != nil {
				o.PID = s.PID
			}
		}
	}
	return rs.Outs
}

// Retire implements agent.Retirer: a previous instance kept for
// keep_previous whose window ended is stopped through apply (the plan's
// "rollback window ended" update), under the state lock.
func (h *Host) Retire(ctx context.Context, now time.Time) ([]string, error) {
	st, err := h.States.Read()
	if err != nil {
		return nil, err
	}
	due := agent.KeptInstances(st)
	if len(due) == 0 {
		return nil, nil
	}
	cfg, err := h.Load()
	if err != nil {
		return nil, fmt.Errorf("the configuration does not load: %v", err)
	}
	host := cfg.HostOnly()
	expired := agent.WindowsEnded(st, due, func(name string) (time.Duration, bool) {
		if cs := host.Servers[name]; cs != nil {
			return cs.Lifecycle.KeepPrevious, true
		}
		return 0, false
	}, now)
	if len(expired) == 0 {
		return nil, nil
	}
	id, err := h.States.Lock(ctx, state.NewLockInfo("agent retire"))
	if err != nil {
		return nil, err
	}
	defer func() { _ = h.States.Unlock(id) }()
	if st, err = h.States.Read(); err != nil {
		return nil, err
	}
	in := h.Refresh(ctx, host, st)
	in.Mode, in.Targets = plan.ModeNormal, due
	p := plan.Make(in)
	if p.HasErrors() {
		return nil, errors.New("the plan to end rollback windows has errors; run roofline plan")
	}
	retired := p.EndWindows()
	if len(retired) == 0 {
		return nil, nil
	}
	if _, err := h.Applier().Apply(ctx, p, st); err != nil {
		return nil, err
	}
	return retired, nil
}
