package plan

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"sort"
	"strings"

	"github.com/roofline/roofline/internal/engine"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/portcheck"
	"github.com/roofline/roofline/internal/state"
)

const gib = 1 << 30

// crossChecks runs the checks that involve more than one server or the
// machine: GPUs that exist, memory shared between servers (also during a
// create-before-destroy overlap), ports, foreign processes.
func (pl *planner) crossChecks() {
	snap := pl.in.Snapshot
	cfg := pl.in.Config
	ours := pl.ourPids()

	// GPUs exist, and foreign processes on them.
	warnedGPU := map[int]bool{}
	for _, name := range cfg.ServerNames() {
		s := cfg.Servers[name]
		if !pl.targeted(name) || snap == nil {
			continue
		}
		for _, g := range s.GPUs {
			dev, ok := snap.GPU(g)
			if !ok {
				pl.diag(hcl.DiagError, ptr(s.Range("gpus")), "No such GPU",
					"Server %q wants GPU %d, but %s has %s. Check `roofline gpu`.", s.Name, g, snapName(snap), gpuList(snap))
				continue
			}
			if dev.MIGMode == gpu.MIGEnabled {
				pl.diag(hcl.DiagWarning, ptr(s.Range("gpus")), "GPU in MIG mode",
					"GPU %d (%s) has MIG enabled; the engine sees one MIG slice, not the whole GPU, and the memory figures here assume the whole GPU.", g, dev.Name)
			}
			if warnedGPU[g] {
				continue
			}
			var foreign []string
			for _, p := range dev.Processes {
				if !ours[p.PID] {
					foreign = append(foreign, fmt.Sprintf("pid %d %s (%.1f GiB)", p.PID, procName(p), float64(p.UsedMemoryBytes)/gib))
				}
			}
			if len(foreign) > 0 {
				warnedGPU[g] = true
				pl.diag(hcl.DiagWarning, ptr(s.Range("gpus")), "Foreign processes on GPU",
					"GPU %d runs processes roofline did not start: %s. Their memory is not available to server %q; stop them or choose another GPU (`roofline gpu`).",
					g, strings.Join(foreign, ", "), s.Name)
			}
		}
	}

	pl.memoryChecks(ours)
	pl.portChecks()
	pl.exposureChecks()
}

func procName(p gpu.Process) string {
	if len(p.Cmdline) > 0 {
		return portcheck.OneLine(strings.Join(p.Cmdline, " "), 60)
	}
	if p.Name != "" {
		return portcheck.OneLine(p.Name, 60)
	}
	return "(unknown)"
}

func snapName(s *gpu.Snapshot) string {
	if s.Host != "" {
		return "host " + s.Host
	}
	return "the inventory"
}

func gpuList(s *gpu.Snapshot) string {
	if len(s.GPUs) == 0 {
		return "no GPUs"
	}
	idx := make([]string, len(s.GPUs))
	for i, g := range s.GPUs {
		idx[i] = fmt.Sprint(g.Index)
	}
	return "GPUs " + strings.Join(idx, ", ")
}

// ourPids are the pids of the processes of our servers that refresh saw alive.
func (pl *planner) ourPids() map[int]bool {
	ours := map[int]bool{}
	for name, o := range pl.in.Observed {
		if o == nil || !o.Alive {
			continue
		}
		if s := pl.prior.Servers[name]; s != nil {
			ours[s.PID] = true
		}
		for _, pid := range o.GPUPids {
			ours[pid] = true
		}
		if k := o.Kept; k != nil && k.Alive {
			// A previous instance kept for rollback: its memory is
			// counted as its own claim (memoryChecks), not as foreign.
			for _, pid := range k.GPUPids {
				ours[pid] = true
			}
			if s := pl.prior.Servers[name]; s != nil && s.Deposed != nil {
				ours[s.Deposed.PID] = true
			}
		}
	}
	return ours
}

// claim is one server's memory on one GPU; kept marks the previous
// instance a server keeps for rollback.
type claim struct {
	server string
	bytes  uint64
	kept   bool
	// untargeted: a running server that -target leaves out; it keeps its
	// memory whatever this plan does.
	untargeted bool
}

func (c claim) label() string {
	if c.untargeted {
		return fmt.Sprintf("%s (not targeted, running) %.1f GiB", c.server, float64(c.bytes)/gib)
	}
	if c.kept {
		return fmt.Sprintf("%s's kept previous instance %.1f GiB", c.server, float64(c.bytes)/gib)
	}
	return fmt.Sprintf("%s %.1f GiB", c.server, float64(c.bytes)/gib)
}

// memoryChecks checks every GPU's total claims in the final state and, for
// create-before-destroy replacements, during the overlap. A replacement that
// cannot overlap falls back to destroy-then-create, with its downtime stated.
func (pl *planner) memoryChecks(ours map[int]bool) {
	snap := pl.in.Snapshot
	if snap == nil {
		return
	}
	avail := map[int]uint64{}
	foreignBytes := map[int]uint64{}
	for _, g := range snap.GPUs {
		var foreign uint64
		for _, p := range g.Processes {
			if !ours[p.PID] {
				foreign += p.UsedMemoryBytes
			}
		}
		// Memory used but not by any listed process (other containers, the
		// display) counts as foreign too; our own processes' memory is not.
		var ourUse uint64
		for _, p := range g.Processes {
			if ours[p.PID] {
				ourUse += p.UsedMemoryBytes
			}
		}
		if g.MemoryUsedBytes > ourUse+foreign {
			foreign = g.MemoryUsedBytes - ourUse
		}
		foreignBytes[g.Index] = foreign
		total := g.CUDATotalBytes()
		if foreign < total {
			avail[g.Index] = total - foreign
		}
	}

	final := map[int][]claim{}
	for _, c := range pl.p.Changes {
		if c.After == nil {
			continue
		}
		for _, g := range c.After.GPUs {
			final[g] = append(final[g], claim{server: c.Name, bytes: pl.claimBytes(c.Name, g)})
		}
	}
	// Previous instances kept for rollback hold their memory until their
	// window ends: the GPUs must hold them beside everything else.
	for _, c := range pl.p.Changes {
		if k := c.Kept; k.Stays() && k.MemoryBytes > 0 && c.Action != Delete && c.Action != Create && !c.Action.IsReplace() {
			for _, g := range k.GPUs {
				final[g] = append(final[g], claim{server: c.Name, bytes: k.MemoryBytes, kept: true})
			}
		}
	}
	// With -target the servers left out of the plan still run: their
	// memory is neither foreign (they are ours) nor free.
	for _, name := range pl.prior.Names() {
		s := pl.prior.Servers[name]
		if pl.targeted(name) || !s.Running() || s.Status == state.StatusFailed {
			continue
		}
		if o := pl.in.Observed[name]; o != nil && !o.Alive {
			continue
		}
		for _, g := range s.GPUs {
			held, _ := pl.holds(pl.in.Observed[name], s.ClaimBytes, name, g)
			final[g] = append(final[g], claim{server: name, bytes: held, untargeted: true})
		}
		// Its previous instance kept for rollback too: apply leaves it
		// alone while the server is not targeted.
		if k := pl.keptOf(name, s, pl.desired[name]); k.Stays() && k.MemoryBytes > 0 {
			for _, g := range k.GPUs {
				final[g] = append(final[g], claim{server: name, bytes: k.MemoryBytes, kept: true})
			}
		}
	}
	gpus := make([]int, 0, len(final))
	for g := range final {
		gpus = append(gpus, g)
	}
	sort.Ints(gpus)
	for _, g := range gpus {
		cl := final[g]
		if _, ok := snap.GPU(g); !ok {
			continue
		}
		var sum uint64
		for _, c := range cl {
			sum += c.bytes
		}
		if sum <= avail[g] {
			continue
		}
		names := make([]string, len(cl))
		var keptBy []string
		subject := cl[len(cl)-1].server
		for i, c := range cl {
			names[i] = c.label()
			switch {
			case c.kept:
				keptBy = append(keptBy, c.server)
			case !c.untargeted:
				subject = c.server
			}
		}
		s := pl.in.Config.Servers[subject]
		if s == nil {
			continue
		}
		if len(cl) > 1 {
			hint := ""
			if len(keptBy) > 0 {
				hint = fmt.Sprintf(" A kept previous instance holds its memory until its rollback window ends (lifecycle keep_previous of %s): wait for it, or shorten keep_previous, and the next apply stops it.", strings.Join(keptBy, ", "))
			}
			pl.diag(hcl.DiagError, ptr(s.Range("gpus")), "Servers on one GPU do not fit together",
				"GPU %d: %s claim %.1f GiB together, but %.1f GiB is free for roofline (%.1f GiB total, %.1f GiB held by foreign processes). Lower gpu_memory_utilization so the shares add up to less than 1, or move a server to another GPU.%s",
				g, strings.Join(names, " + "), float64(sum)/gib, float64(avail[g])/gib, float64(cudaTotal(snap, g))/gib, float64(foreignBytes[g])/gib, hint)
		} else {
			pl.diag(hcl.DiagError, ptr(s.Range("gpus")), "Not enough free GPU memory",
				"GPU %d: server %q claims %.1f GiB (gpu_memory_utilization × total), but only %.1f GiB is free: foreign processes hold %.1f GiB. The engine refuses to start when free memory is below its share; stop them (`roofline gpu`) or lower gpu_memory_utilization.",
				g, cl[0].server, float64(sum)/gib, float64(avail[g])/gib, float64(foreignBytes[g])/gib)
		}
	}

	// The overlap of create-before-destroy: the old instance still runs
	// while the new one loads.
	for _, c := range pl.p.Changes {
		if c.Action != CreateThenDelete {
			continue
		}
		var blocked []string
		for _, g := range c.After.GPUs {
			var sum uint64
			for _, cl := range final[g] {
				sum += cl.bytes
			}
			if c.Before != nil && slices.Contains(c.Before.GPUs, g) {
				sum += pl.oldClaim(c, g)
			}
			if sum > avail[g] {
				blocked = append(blocked, fmt.Sprintf("GPU %d needs %.1f GiB for both, %.1f GiB is free", g, float64(sum)/gib, float64(avail[g])/gib))
			}
		}
		if c.Before != nil && c.Before.Port == c.After.Port && !pl.overlapPortOK(c) {
			blocked = append(blocked, fmt.Sprintf("both would listen on port %d", c.After.Port))
		}
		if len(blocked) > 0 {
			c.Action = DeleteThenCreate
			c.Downtime = "create_before_destroy is not possible: " + strings.Join(blocked, "; ") + ". The old server is stopped first: the model is unavailable until the new one passes its gates."
			s := pl.in.Config.Servers[c.Name]
			pl.diag(hcl.DiagWarning, ptr(s.Lifecycle.DeclRange), "Replacement with downtime",
				"Server %q: %s", c.Name, c.Downtime)
		}
	}
	for _, c := range pl.p.Changes {
		if c.Action == DeleteThenCreate && c.Downtime == "" {
			c.Downtime = "the old server is stopped before the new one starts: the model is unavailable until the new one passes its gates (set lifecycle { create_before_destroy = true } to avoid it where GPUs allow)"
		}
	}
}

func cudaTotal(s *gpu.Snapshot, idx int) uint64 {
	if g, ok := s.GPU(idx); ok {
		return g.CUDATotalBytes()
	}
	return 0
}

// claimBytes is the memory server name takes on GPU g.
func (pl *planner) claimBytes(name string, g int) uint64 {
	if f := pl.fits[name]; f != nil && f.RequestedBytes > 0 {
		return f.RequestedBytes
	}
	s := pl.in.Config.Servers[name]
	util := s.GPUMemoryUtilization
	if util == 0 {
		util = engine.Default().DefaultMemoryUtilization
		if e := pl.in.Config.Engines[s.Engine]; e != nil {
			util = engine.LookupOrDefault(e.Kind).DefaultMemoryUtilization
		}
	}
	return uint64(util * float64(cudaTotal(pl.in.Snapshot, g)))
}

// oldClaim estimates what the running instance holds on GPU g: its
// recorded prediction's share, else the same as the new one.
func (pl *planner) oldClaim(c *Change, g int) uint64 {
	if c.Before != nil && c.Before.ClaimBytes > 0 {
		return c.Before.ClaimBytes // what it claimed at its start, per GPU
	}
	return pl.claimBytes(c.Name, g) // a state from before claim_bytes
}

// overlapPortOK: two instances of one server cannot bind one port, so a
// same-port create-before-destroy needs the front proxy.
func (pl *planner) overlapPortOK(c *Change) bool {
	return c.After.Proxy && c.Before.Proxy != nil
}

// portChecks: ports held by processes that are not ours, or by our servers
// that stay running.
func (pl *planner) portChecks() {
	pl.backendRangeChecks()
	if pl.in.Ports == nil {
		return
	}
	ourPorts := map[int]string{}
	for name, s := range pl.prior.Servers {
		if o := pl.in.Observed[name]; o != nil && o.Alive {
			ourPorts[s.Port] = name
			if s.BackendPort != 0 {
				ourPorts[s.BackendPort] = name
			}
		}
		if s.Proxy != nil && s.Proxy.PID > 0 {
			// roofline's own proxy holds the public port even when the
			// engine behind it died; apply reuses it.
			ourPorts[s.Port] = name
		}
	}
	for name, im := range pl.imports {
		// The imported process holds its configured port (unless it runs
		// on another); a replacement stops it first.
		if !slices.Contains(im.Differences, "port") {
			ourPorts[pl.prior.Servers[name].Port] = name
		}
	}
	pl.foreignListeners()
	for _, c := range pl.p.Changes {
		if c.After == nil || c.Action == NoOp || c.Action == Update {
			continue
		}
		s := pl.in.Config.Servers[c.Name]
		if _, ours := ourPorts[c.After.Port]; ours {
			continue // freed by a delete or replacement that runs first, or the proxy's
		}
		host := c.After.Host
		if held, who := pl.in.Ports.Holder(host, c.After.Port); held {
			pl.diag(hcl.DiagError, ptr(s.Range("port")), "Port in use",
				"Port %d is held by %s, which roofline did not start. Stop it, or choose another port for server %q.", c.After.Port, who, c.Name)
		}
	}
}

// backendRangeChecks: a public port inside the backend port range could be
// handed to another server's engine; that is an error once any server is
// behind a proxy.
func (pl *planner) backendRangeChecks() {
	proxied := false
	for _, d := range pl.desired {
		proxied = proxied || d.Proxy
	}
	if !proxied {
		return
	}
	r := pl.in.Config.BackendPortRange()
	for _, name := range slices.Sorted(maps.Keys(pl.desired)) {
		d := pl.desired[name]
		if d.Port >= r[0] && d.Port <= r[1] {
			rng := pl.in.Config.Servers[name].Range("port")
			pl.diag(hcl.DiagError, &rng, "Port inside the backend port range",
				"Server %q listens on port %d, inside backend_ports %d-%d, where roofline picks the ports of the engines behind its proxies. Choose a port outside it, or set backend_ports in the roofline block to a range that leaves it out.", name, d.Port, r[0], r[1])
		}
	}
}

// foreignListeners: a socket on a running server's port (public or backend)
// that none of its processes owns takes a share of its connections when both
// use SO_REUSEPORT (vLLM does), or answers its clients on another address
// ([::1] for "localhost").
func (pl *planner) foreignListeners() {
	ll, ok := pl.in.Ports.(ListenerLister)
	if !ok {
		return
	}
	for _, name := range pl.prior.Names() {
		s := pl.prior.Servers[name]
		o := pl.in.Observed[name]
		if o == nil || !o.Alive {
			continue
		}
		ours := map[int]bool{s.PID: true}
		for _, p := range o.GPUPids {
			ours[p] = true
		}
		if s.Proxy != nil {
			ours[s.Proxy.PID] = true
		}
		for _, port := range []int{s.Port, s.BackendPort} {
			if port == 0 {
				continue
			}
			for _, l := range ll.Listeners(port) {
				if l.PID != 0 && ours[l.PID] {
					continue
				}
				var subject *hcl.Range
				if cs := pl.in.Config.Servers[name]; cs != nil {
					subject = ptr(cs.Range("port"))
				}
				pl.diag(hcl.DiagWarning, subject, "Foreign listener beside a server",
					"%s listens on %s, the port of server %q, and roofline did not start it. Clients of the server can reach it instead (with SO_REUSEPORT it takes a share of the connections). Stop it, or move server %q to another port.", l.Who, l.Addr, name, name)
			}
		}
	}
}

// exposureChecks: a server that listens beyond loopback with no API key
// answers anyone who can reach the host.
func (pl *planner) exposureChecks() {
	for _, name := range slices.Sorted(maps.Keys(pl.desired)) {
		d := pl.desired[name]
		host := ListenHost(d)
		if d.Keyed || loopbackOnly(host) {
			continue
		}
		cs := pl.in.Config.Servers[name]
		rng := cs.Range("host")
		pl.diag(hcl.DiagWarning, &rng, "Server open beyond loopback without an API key",
			"Server %q listens on %s, beyond loopback, and needs no API key: anyone who reaches that address can use it. Set api_key (from a sensitive variable) or api_key_file, or host = \"127.0.0.1\".", name, net.JoinHostPort(host, fmt.Sprint(d.Port)))
	}
}
