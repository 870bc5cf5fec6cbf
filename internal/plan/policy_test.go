package plan

import (
	"reflect"
	"testing"
)

func TestPolicyBreaks(t *testing.T) {
	p := &Plan{Changes: []*Change{
		{Addr: "server.a", Action: DeleteThenCreate, Reason: "gpus changed"},
		{Addr: "server.b", Action: CreateThenDelete, Reason: "argv changed"},
		{Addr: "server.c", Action: Delete, Reason: "not in the configuration"},
		{Addr: "server.d", Action: NoOp},
	}}
	for _, tc := range []struct {
		policies []string
		want     []string
	}{
		{nil, nil},
		{[]string{"downtime"}, []string{"server.a is replaced with downtime (gpus changed)"}},
		{[]string{"destroy"}, []string{"server.c is destroyed (not in the configuration)"}},
		{[]string{"destroy", "downtime"}, []string{"server.c is destroyed (not in the configuration)", "server.a is replaced with downtime (gpus changed)"}},
	} {
		if got := p.PolicyBreaks(tc.policies); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%v: %q, want %q", tc.policies, got, tc.want)
		}
	}
}

func TestCheckPolicies(t *testing.T) {
	for _, c := range []struct {
		in      []string
		wantErr string
	}{
		{nil, ""},
		{[]string{"downtime", "destroy"}, ""},
		{[]string{"destroy", "downtim", "x"}, "-fail-on=downtim: the policies are downtime and destroy"},
		{[]string{""}, "-fail-on=: the policies are downtime and destroy"},
	} {
		err := CheckPolicies(c.in)
		if (err == nil) != (c.wantErr == "") || err != nil && err.Error() != c.wantErr {
			t.Errorf("CheckPolicies(%q) = %v, want %q", c.in, err, c.wantErr)
		}
	}
}
