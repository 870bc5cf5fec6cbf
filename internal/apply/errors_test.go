package apply

import (
	"errors"
	"reflect"
	"testing"

	"github.com/hashicorp/go-multierror"
)

func TestServerErrors(t *testing.T) {
	a := &ServerError{Addr: "server.a", Phase: "start", Err: errors.New("exited")}
	b := &ServerError{Addr: "server.b", Phase: "health", Err: errors.New("timeout")}
	other := errors.New("writing the state: disk full")
	for _, tc := range []struct {
		name       string
		err        error
		wantFailed map[string]*ServerError
		wantOther  []string
	}{
		{"nil", nil, map[string]*ServerError{}, nil},
		{"one server", a, map[string]*ServerError{"a": a}, nil},
		{"joined, nested", errors.Join(a, errors.Join(b, other)), map[string]*ServerError{"a": a, "b": b}, []string{other.Error()}},
		{"multierror", multierror.Append(nil, b, other), map[string]*ServerError{"b": b}, []string{other.Error()}},
		{"wrapped", errors.Join(wrap{a}), map[string]*ServerError{"a": a}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			failed, rest := ServerErrors(tc.err)
			if !reflect.DeepEqual(failed, tc.wantFailed) || !reflect.DeepEqual(rest, tc.wantOther) {
				t.Errorf("%v %q, want %v %q", failed, rest, tc.wantFailed, tc.wantOther)
			}
		})
	}
}

type wrap struct{ err error }

func (w wrap) Error() string { return "wrapped: " + w.err.Error() }
func (w wrap) Unwrap() error { return w.err }
