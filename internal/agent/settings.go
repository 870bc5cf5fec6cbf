package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/roofline/roofline/internal/fsx"
)

// Settings are the agent's own knobs (not the servers': those come from the
// state). Intervals are configurable so that tests run in seconds; the
// defaults follow Kubernetes' CrashLoopBackOff.
type Settings struct {
	// Tick is how often every server is observed (process, /health).
	Tick time.Duration
	// GenerateEvery is how often a ready server must also answer a short
	// real generation: /health can be green while generation fails.
	GenerateEvery time.Duration
	// BackoffInitial is the wait after the first restart; it doubles after
	// each further restart up to BackoffMax.
	BackoffInitial, BackoffMax time.Duration
	// ResetAfter: a server healthy this long has its backoff and failure
	// count reset.
	ResetAfter time.Duration
	// MaxRestarts is how many restarts in a row may fail before the agent
	// stops trying and reports the cause.
	MaxRestarts int
	// HangChecks is how many failed checks in a row make a running server
	// "hung" (restarted).
	HangChecks int
}

// DefaultSettings are the agent's defaults.
func DefaultSettings() Settings {
	return Settings{
		Tick:           5 * time.Second,
		GenerateEvery:  time.Minute,
		BackoffInitial: 10 * time.Second,
		BackoffMax:     5 * time.Minute,
		ResetAfter:     10 * time.Minute,
		MaxRestarts:    5,
		HangChecks:     3,
	}
}

// Validate explains a setting that cannot work.
func (s Settings) Validate() error {
	switch {
	case s.Tick <= 0:
		return fmt.Errorf("tick must be positive, got %s", s.Tick)
	case s.GenerateEvery < 0:
		return fmt.Errorf("generate_every must not be negative, got %s", s.GenerateEvery)
	case s.BackoffInitial <= 0 || s.BackoffMax < s.BackoffInitial:
		return fmt.Errorf("backoff_initial (%s) must be positive and at most backoff_max (%s)", s.BackoffInitial, s.BackoffMax)
	case s.ResetAfter <= 0:
		return fmt.Errorf("reset_after must be positive, got %s", s.ResetAfter)
	case s.MaxRestarts < 1:
		return fmt.Errorf("max_restarts must be at least 1, got %d", s.MaxRestarts)
	case s.HangChecks < 1:
		return fmt.Errorf("hang_checks must be at least 1, got %d", s.HangChecks)
	}
	return nil
}

// settingsFile is the JSON form: durations in Go's syntax ("10s", "5m").
type settingsFile struct {
	Tick           *string `json:"tick"`
	GenerateEvery  *string `json:"generate_every"`
	BackoffInitial *string `json:"backoff_initial"`
	BackoffMax     *string `json:"backoff_max"`
	ResetAfter     *string `json:"reset_after"`
	MaxRestarts    *int    `json:"max_restarts"`
	HangChecks     *int    `json:"hang_checks"`
}

// LoadSettings reads a settings file over base: what the file sets wins;
// no file ("") is base. The agent calls it at start and on SIGHUP.
func LoadSettings(path string, base Settings) (Settings, error) {
	if path == "" {
		return base, nil
	}
	b, err := fsx.ReadFile(path, 1<<20)
	if err != nil {
		return base, fmt.Errorf("agent settings: %w", err)
	}
	var f settingsFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return base, fmt.Errorf("agent settings %s: %w (keys: tick, generate_every, backoff_initial, backoff_max, reset_after, max_restarts, hang_checks)", path, err)
	}
	s := base
	for _, d := range []struct {
		name string
		v    *string
		dst  *time.Duration
	}{
		{"tick", f.Tick, &s.Tick}, {"generate_every", f.GenerateEvery, &s.GenerateEvery},
		{"backoff_initial", f.BackoffInitial, &s.BackoffInitial}, {"backoff_max", f.BackoffMax, &s.BackoffMax},
		{"reset_after", f.ResetAfter, &s.ResetAfter},
	} {
		if d.v == nil {
			continue
		}
		v, err := time.ParseDuration(*d.v)
		if err != nil {
			return base, fmt.Errorf("agent settings %s: %s: %w", path, d.name, err)
		}
		*d.dst = v
	}
	if f.MaxRestarts != nil {
		s.MaxRestarts = *f.MaxRestarts
	}
	if f.HangChecks != nil {
		s.HangChecks = *f.HangChecks
	}
	if err := s.Validate(); err != nil {
		return base, fmt.Errorf("agent settings %s: %w", path, err)
	}
	return s, nil
}
