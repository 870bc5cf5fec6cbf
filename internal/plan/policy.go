package plan

import (
	"fmt"
	"slices"
	"strings"
)

// Policies are the -fail-on policies PolicyBreaks knows.
var Policies = []string{"downtime", "destroy"}

// CheckPolicies refuses the first -fail-on value that is not a policy.
func CheckPolicies(policies []string) error {
	for _, f := range policies {
		if !slices.Contains(Policies, f) {
			return fmt.Errorf("-fail-on=%s: the policies are %s", f, strings.Join(Policies, " and "))
		}
	}
	return nil
}

// PolicyBreaks lists what in p breaks a -fail-on policy: "downtime" (a
// replacement that stops the old server first) and "destroy" (a server
// removed); one line per change, in the policies' order.
func (p *Plan) PolicyBreaks(policies []string) []string {
	var broken []string
	for _, pol := range policies {
		for _, c := range p.Changes {
			switch {
			case pol == "downtime" && c.Action == DeleteThenCreate:
				broken = append(broken, fmt.Sprintf("%s is replaced with downtime (%s)", c.Addr, c.Reason))
			case pol == "destroy" && c.Action == Delete:
				broken = append(broken, fmt.Sprintf("%s is destroyed (%s)", c.Addr, c.Reason))
			}
		}
	}
	return broken
}
