package apply

import (
	"errors"
	"strings"
)

// ServerErrors sorts the error Apply returned: the failures of servers, by
// server name, and the other errors' texts.
func ServerErrors(err error) (failed map[string]*ServerError, other []string) {
	failed = map[string]*ServerError{}
	for _, e := range flatten(err) {
		var se *ServerError
		if errors.As(e, &se) {
			failed[strings.TrimPrefix(se.Addr, "server.")] = se
		} else if e != nil {
			other = append(other, e.Error())
		}
	}
	return failed, other
}

// flatten lists the errors a multierror or errors.Join holds.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	if u, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range u.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	if u, ok := err.(interface{ WrappedErrors() []error }); ok {
		return u.WrappedErrors()
	}
	return []error{err}
}
