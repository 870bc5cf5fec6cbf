package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/state"
)

// Labels roofline puts on its containers.
const (
	LabelManaged    = "roofline.managed"     // "true" on every container roofline creates
	LabelServer     = "roofline.server"      // the server's address, "server.NAME"
	LabelLaunchID   = "roofline.launch_id"   // the launch id in the state (and in ROOFLINE_LAUNCH_ID)
	LabelLineage    = "roofline.lineage"     // the state's lineage
	LabelStateDir   = "roofline.state_dir"   // the state directory, absolute
	LabelConfigHash = "roofline.config_hash" // the planner's hash of the desired server
	LabelProbe      = "roofline.probe"       // "true" on the throwaway containers of a probe
	LabelProbeOwner = "roofline.probe_owner" // "HOST:PID" of the roofline that runs the probe
)

// Driver runs engines as containers. The zero value is not usable; call New.
type Driver struct {
	C *Client
	// LogMaxSize and LogMaxFiles rotate the daemon's json-file log of a
	// container (docker run --log-opt max-size=, max-file=).
	LogMaxSize  string
	LogMaxFiles int
	// Ulimits are set on every engine container; none by default (see
	// docs/docker.md on memlock).
	Ulimits []Ulimit
	// CallTimeout bounds one daemon call that is not a stop or a probe run.
	CallTimeout time.Duration
}

// New returns a driver that talks to the daemon through c.
func New(c *Client) *Driver {
	return &Driver{C: c, LogMaxSize: "50m", LogMaxFiles: 3, CallTimeout: 2 * time.Minute}
}

// Spec is one engine container to start.
type Spec struct {
	Name  string // the server's name
	Image string // repo@sha256:<digest>, as the configuration pins it
	// Argv is the engine's command inside the image: Argv[0] replaces the
	// image's entrypoint, the rest is its command ("vllm", "serve", ...).
	Argv []string
	Env  map[string]string
	// GPUs are host GPU indexes, requested from the NVIDIA runtime; inside
	// the container they are numbered from 0.
	GPUs []int
	// ModelPath is mounted read-only at the same path.
	ModelPath string
	// LogPath receives a mirror of the container's log (see SyncLog).
	LogPath  string
	LaunchID string
	// Labels are added to the container's (lineage, config hash, ...).
	Labels map[string]string
}

// ContainerName is the name of the container of one instance of server:
// deterministic, and different for the two instances that overlap during a
// create-before-destroy rollout.
func ContainerName(server, launchID string) string {
	return "roofline-" + sanitizeName(server) + "-" + sanitizeName(launchID)
}

var badNameChars = regexp.MustCompile(`[^a-zA-Z0-9_.-]`)

func sanitizeName(s string) string { return badNameChars.ReplaceAllString(s, "_") }

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func (d *Driver) timeout(ctx context.Context) (context.Context, context.CancelFunc) {
	t := d.CallTimeout
	if t <= 0 {
		t = 2 * time.Minute
	}
	return context.WithTimeout(ctx, t)
}

// ImageMissingError is an engine image that is not on this host. Roofline
// never pulls: an air-gapped host cannot, and plan proves that apply will
// download nothing.
type ImageMissingError struct{ Ref string }

func (e *ImageMissingError) Error() string {
	repo, _, _ := strings.Cut(e.Ref, "@")
	return fmt.Sprintf("image %s is not on this host (neither by that registry digest nor as an image id), and roofline never pulls: "+
		"an air-gapped host cannot, and plan proves that nothing will be downloaded. Bring it here: on a connected host "+
		"`docker pull %s` and `docker save -o engine.tar %s`, copy engine.tar here and `docker load -i engine.tar`. "+
		"docker load keeps the image id but not the registry digest: then pin image = \"%s@sha256:<id>\" with the id that "+
		"`docker images --no-trunc` shows, or push the image to a registry on this host and pin the digest the push prints",
		e.Ref, e.Ref, e.Ref, repo)
}

// ResolveImage finds the local image ref pins ("repo@sha256:X") without
// pulling: X is either the registry's manifest digest (an image pulled by
// digest or pushed has it) or the image id (what docker load keeps). It
// returns the reference to create containers from and the image.
func (d *Driver) ResolveImage(ctx context.Context, ref string) (string, *Image, error) {
	ctx, cancel := d.timeout(ctx)
	defer cancel()
	img, err := d.C.ImageInspect(ctx, ref)
	if err == nil {
		return ref, img, nil
	}
	if !IsNotFound(err) {
		return "", nil, err
	}
	if _, dg, ok := strings.Cut(ref, "@"); ok && strings.HasPrefix(dg, "sha256:") {
		img, err := d.C.ImageInspect(ctx, dg)
		if err == nil && img.ID == dg {
			return img.ID, img, nil
		}
		if err != nil && !IsNotFound(err) {
			return "", nil, err
		}
	}
	return "", nil, &ImageMissingError{Ref: ref}
}

// containerConfig is the create request for spec, from image ref.
func (d *Driver) containerConfig(spec Spec, ref string) *ContainerConfig {
	env := make([]string, 0, len(spec.Env))
	for k, v := range spec.Env {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	labels := map[string]string{LabelManaged: "true", LabelServer: "server." + spec.Name, LabelLaunchID: spec.LaunchID}
	for k, v := range spec.Labels {
		if v != "" {
			labels[k] = v
		}
	}
	init := true
	hc := HostConfig{
		// Host networking: the engine binds the host and port of its argv
		// as a local process would, and the proxy and the port checks see
		// it where they look. No NAT between clients and the engine.
		NetworkMode: "host",
		// NCCL and PyTorch's shared-memory tensors need more than the
		// default 64 MiB /dev/shm; the engines' docs use --ipc=host.
		IpcMode:       "host",
		Init:          &init,
		RestartPolicy: RestartPolicy{Name: "no"},
		LogConfig:     LogConfig{Type: "json-file", Config: map[string]string{}},
		Ulimits:       d.Ulimits,
	}
	if d.LogMaxSize != "" {
		hc.LogConfig.Config["max-size"] = d.LogMaxSize
	}
	if d.LogMaxFiles > 0 {
		hc.LogConfig.Config["max-file"] = strconv.Itoa(d.LogMaxFiles)
	}
	if spec.ModelPath != "" {
		hc.Mounts = []Mount{{Type: "bind", Source: spec.ModelPath, Target: spec.ModelPath, ReadOnly: true}}
	}
	if len(spec.GPUs) > 0 {
		ids := make([]string, len(spec.GPUs))
		for i, g := range spec.GPUs {
			ids[i] = strconv.Itoa(g)
		}
		hc.DeviceRequests = []DeviceRequest{{Driver: "nvidia", DeviceIDs: ids, Capabilities: [][]string{{"gpu"}}}}
	}
	return &ContainerConfig{
		Image:      ref,
		Entrypoint: spec.Argv[:1],
		Cmd:        append([]string{}, spec.Argv[1:]...),
		Env:        env,
		Labels:     labels,
		StopSignal: "SIGTERM",
		HostConfig: hc,
	}
}

var _ driver.Driver = (*Driver)(nil)

// Start starts the container of a launch spec (see driver.Driver): the
// spec's state directory, lineage and config hash become labels.
func (d *Driver) Start(ctx context.Context, spec driver.LaunchSpec) (state.Instance, error) {
	labels := map[string]string{LabelLineage: spec.Lineage, LabelConfigHash: spec.ConfigHash}
	if spec.Dir != "" {
		if abs, err := filepath.Abs(spec.Dir); err == nil {
			labels[LabelStateDir] = abs
		}
	}
	p, err := d.StartContainer(ctx, Spec{Name: spec.Name, Image: spec.Image, Argv: spec.Argv, Env: spec.EnvWithLaunchID(),
		GPUs: spec.GPUs, ModelPath: spec.ModelPath, LogPath: spec.LogPath, LaunchID: spec.LaunchID, Labels: labels})
	if err != nil {
		return state.Instance{}, err
	}
	return *p, nil
}

// Read observes the container of i (see driver.Driver), refreshing its log
// mirror on the way.
func (d *Driver) Read(ctx context.Context, i state.Instance) (*driver.Observed, error) {
	if i.ID == "" {
		return &driver.Observed{Detail: "no container was recorded"}, nil
	}
	st, err := d.check(ctx, &i, i.Name, i.LaunchID, true)
	if err != nil {
		return nil, err
	}
	o := &driver.Observed{Alive: st.Alive, Detail: st.Detail, PIDs: st.PIDs}
	if st.Found != nil && st.Alive {
		o.PID = st.Found.State.Pid
		o.Cmdline = append(append([]string(nil), st.Found.Config.Entrypoint...), st.Found.Config.Cmd...)
	}
	return o, nil
}

// Find returns the containers started with launchID, newest first.
func (d *Driver) Find(ctx context.Context, launchID string) ([]state.Instance, error) {
	cs, err := d.FindByLaunchID(ctx, launchID)
	if err != nil {
		return nil, err
	}
	out := make([]state.Instance, 0, len(cs))
	for _, c := range cs {
		out = append(out, *ProcessOf(c, ""))
	}
	return out, nil
}

// StartContainer creates and starts the container of spec and returns its identity:
// the container id, the host pid of its init process and its start time
// (Unix nanoseconds, in StartTime). It returns once the container runs,
// without waiting for the engine.
func (d *Driver) StartContainer(ctx context.Context, spec Spec) (*state.Instance, error) {
	if spec.Image == "" || len(spec.Argv) == 0 {
		return nil, errors.New("docker driver: a container needs an image and a command")
	}
	ref, _, err := d.ResolveImage(ctx, spec.Image)
	if err != nil {
		return nil, err
	}
	cctx, cancel := d.timeout(ctx)
	defer cancel()
	name := ContainerName(spec.Name, spec.LaunchID)
	id, err := d.C.ContainerCreate(cctx, name, d.containerConfig(spec, ref))
	switch {
	case IsConflict(err):
		return nil, fmt.Errorf("a container named %s already exists, which roofline did not expect: if it does not serve anything, remove it with `docker rm -f %s` and apply again (%v)", name, name, err)
	case IsNotFound(err):
		return nil, &ImageMissingError{Ref: spec.Image}
	case err != nil:
		return nil, explainStart(err)
	}
	if spec.LogPath != "" {
		if err := prepareLog(spec.LogPath, id); err != nil {
			_ = d.C.ContainerRemove(context.WithoutCancel(cctx), id)
			return nil, err
		}
	}
	if err := d.C.ContainerStart(cctx, id); err != nil {
		_ = d.C.ContainerRemove(context.WithoutCancel(cctx), id)
		return nil, explainStart(err)
	}
	p := &state.Instance{Driver: state.DriverDocker, ID: id, Name: name, Cmdline: append([]string(nil), spec.Argv...), LogPath: spec.LogPath, LaunchID: spec.LaunchID}
	// The container runs: an inspect that fails now only costs the
	// restart check, never the record of the container.
	if c, err := d.C.ContainerInspect(cctx, id); err == nil {
		p.PID = c.State.Pid
		if t := c.StartedAt(); !t.IsZero() {
			p.StartTime = uint64(t.UnixNano())
		}
	}
	return p, nil
}

// explainStart adds the fix to the daemon errors a GPU host meets.
func explainStart(err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, `could not select device driver "nvidia"`):
		return fmt.Errorf("%w: the daemon has no NVIDIA runtime hook, so it cannot give the container GPUs. Install the NVIDIA Container Toolkit (nvidia-container-toolkit), run `nvidia-ctk runtime configure --runtime=docker` and restart dockerd", err)
	case strings.Contains(msg, "rlimit"):
		return fmt.Errorf("%w: the kernel refused a resource limit of the container (memlock = unlimited is refused in unprivileged sandboxes and some rootless setups). Remove the ulimit from the daemon's default-ulimits, or run on a host that allows it", err)
	case strings.Contains(msg, "bind source path does not exist"):
		return fmt.Errorf("%w: the model folder is mounted into the container at the same path and must exist on this host", err)
	}
	return err
}

// Status is what Check saw of a container.
type Status struct {
	// Alive: the container roofline started runs, in the run roofline
	// started (not restarted since).
	Alive bool
	// Detail says what happened when it is not alive.
	Detail string
	// PIDs are the host pids of its processes while it runs (engine
	// workers included), for matching GPU processes.
	PIDs []int
	// Found is the container as inspected; nil when it is gone.
	Found *Container
}

// Check observes the container of p. server and launchID (may be "") let it
// tell a container started by hand under the name roofline gives its own.
// It refreshes the log mirror on the way. An error means the daemon could
// not be asked.
func (d *Driver) Check(ctx context.Context, p *state.Instance, server, launchID string) (*Status, error) {
	name := ""
	if server != "" && launchID != "" {
		name = ContainerName(server, launchID)
	}
	return d.check(ctx, p, name, launchID, true)
}

// check is Check; pids says whether to list the container's processes
// (docker top runs ps on the daemon's host: not for every health poll).
func (d *Driver) check(ctx context.Context, p *state.Instance, name, launchID string, pids bool) (*Status, error) {
	ctx, cancel := d.timeout(ctx)
	defer cancel()
	id := p.ID
	c, err := d.C.ContainerInspect(ctx, id)
	if IsNotFound(err) {
		st := &Status{Detail: fmt.Sprintf("container %s was removed behind roofline's back (docker rm)", short(id))}
		if name != "" {
			if o, err := d.C.ContainerInspect(ctx, name); err == nil && o.ID != id {
				st.Detail += fmt.Sprintf("; container %s now has its name %s but roofline did not start it (launch id label %q): remove it with `docker rm -f %s`",
					short(o.ID), name, o.Config.Labels[LabelLaunchID], name)
			}
		}
		return st, nil
	}
	if err != nil {
		return nil, err
	}
	_ = d.SyncLog(ctx, id, p.LogPath)
	st := &Status{Found: c}
	if launchID != "" && c.Config.Labels[LabelLaunchID] != launchID {
		st.Detail = fmt.Sprintf("container %s is not the one roofline started: its launch id label is %q, the state's %q", short(id), c.Config.Labels[LabelLaunchID], launchID)
		return st, nil
	}
	switch {
	case c.State.Running && !c.State.Restarting:
	case c.StartedAt().IsZero():
		st.Detail = fmt.Sprintf("container %s was created but never started", short(id))
		return st, nil
	default:
		st.Detail = exitDetail(c)
		return st, nil
	}
	if p.StartTime != 0 {
		if t := c.StartedAt(); !t.IsZero() && uint64(t.UnixNano()) != p.StartTime {
			st.Detail = fmt.Sprintf("container %s was restarted by hand at %s (docker restart or docker start): this run is not the one roofline started and checked", short(id), t.UTC().Format(time.RFC3339))
			return st, nil
		}
	}
	st.Alive = true
	if pids {
		if list, err := d.C.ContainerTop(ctx, id); err == nil {
			st.PIDs = list
		}
	}
	return st, nil
}

// exitDetail says how a container ended.
func exitDetail(c *Container) string {
	s := fmt.Sprintf("container %s exited with status %d", short(c.ID), c.State.ExitCode)
	if t := c.FinishedAt(); !t.IsZero() {
		s += " at " + t.UTC().Format(time.RFC3339)
	}
	switch {
	case c.State.OOMKilled:
		s += " (killed for lack of host memory)"
	case c.State.ExitCode == 137:
		s += " (SIGKILL: docker kill, or the kernel)"
	case c.State.ExitCode == 143:
		s += " (SIGTERM: docker stop?)"
	}
	if c.State.Error != "" {
		s += ": " + c.State.Error
	}
	return s
}

// Alive reports whether the container of p runs the run roofline started.
// A daemon that cannot be asked counts as not alive, as for a process whose
// /proc entry cannot be read.
func (d *Driver) Alive(ctx context.Context, p *state.Instance) bool {
	if p == nil || p.ID == "" {
		return false
	}
	st, err := d.check(ctx, p, "", "", false)
	return err == nil && st.Alive
}

// Stop stops the container of p (its stop signal, SIGTERM, to docker-init,
// which passes it to the engine; after grace, SIGKILL), copies the last of
// its log, and removes it. A container already gone is not an error.
func (d *Driver) Stop(ctx context.Context, i state.Instance, grace time.Duration) error {
	p := &i
	if p.ID == "" {
		return nil
	}
	id := p.ID
	sctx, cancel := context.WithTimeout(ctx, grace+time.Minute)
	defer cancel()
	_ = d.SyncLog(sctx, id, p.LogPath)
	err := d.C.ContainerStop(sctx, id, grace)
	if IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stopping container %s: %w", short(id), err)
	}
	_ = d.SyncLog(sctx, id, p.LogPath)
	if err := d.C.ContainerRemove(sctx, id); err != nil && !IsNotFound(err) {
		return fmt.Errorf("removing container %s (it is stopped): %w", short(id), err)
	}
	return nil
}

// FindByLaunchID returns the containers (running or not) labelled with
// launchID, newest first.
func (d *Driver) FindByLaunchID(ctx context.Context, launchID string) ([]*Container, error) {
	if launchID == "" {
		return nil, nil
	}
	ctx, cancel := d.timeout(ctx)
	defer cancel()
	list, err := d.C.ContainerList(ctx, LabelLaunchID+"="+launchID)
	if err != nil {
		return nil, err
	}
	var out []*Container
	for _, s := range list {
		if s.Labels[LabelProbe] == "true" {
			continue
		}
		c, err := d.C.ContainerInspect(ctx, s.ID)
		if IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created > out[j].Created })
	return out, nil
}

// ProcessOf is the identity Start would have returned for container c.
func ProcessOf(c *Container, logPath string) *state.Instance {
	p := &state.Instance{Driver: state.DriverDocker, ID: c.ID, Name: strings.TrimPrefix(c.Name, "/"), PID: c.State.Pid, LogPath: logPath, LaunchID: c.Config.Labels[LabelLaunchID],
		Cmdline: append(append([]string(nil), c.Config.Entrypoint...), c.Config.Cmd...)}
	if t := c.StartedAt(); !t.IsZero() {
		p.StartTime = uint64(t.UnixNano())
	}
	return p
}

// RunResult is the outcome of RunImage.
type RunResult struct {
	Stdout, Stderr []byte
	ExitCode       int
}

// maxProbeOutput bounds what RunImage keeps of each stream.
const maxProbeOutput = 16 << 20

// RunImage runs argv (argv[0] replacing the entrypoint) in a throwaway
// container of the pinned image ref, with no network and no GPU, waits for
// it to exit, and returns its output. It never pulls. The container is
// removed whatever happens; ctx bounds the run.
func (d *Driver) RunImage(ctx context.Context, ref string, argv, env []string) (*RunResult, error) {
	if len(argv) == 0 {
		return nil, errors.New("docker run: empty command")
	}
	createRef, _, err := d.ResolveImage(ctx, ref)
	if err != nil {
		return nil, err
	}
	cfg := &ContainerConfig{
		Image:      createRef,
		Entrypoint: argv[:1],
		Cmd:        append([]string{}, argv[1:]...),
		Env:        env,
		Labels:     map[string]string{LabelManaged: "true", LabelProbe: "true", LabelProbeOwner: probeOwner()},
		HostConfig: HostConfig{NetworkMode: "none", RestartPolicy: RestartPolicy{Name: "no"}, LogConfig: LogConfig{Type: "json-file"}},
	}
	d.SweepProbes(ctx)
	id, err := d.C.ContainerCreate(ctx, "", cfg)
	if err != nil {
		return nil, err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = d.C.ContainerRemove(rctx, id)
	}()
	if err := d.C.ContainerStart(ctx, id); err != nil {
		return nil, err
	}
	code, err := d.C.ContainerWait(ctx, id)
	if err != nil {
		return nil, err
	}
	rc, err := d.C.ContainerLogs(ctx, id, time.Time{}, false)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var out, errb bytes.Buffer
	err = Demux(rc, func(stream int, p []byte) error {
		b := &out
		if stream == Stderr {
			b = &errb
		}
		if b.Len()+len(p) <= maxProbeOutput {
			b.Write(p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &RunResult{Stdout: out.Bytes(), Stderr: errb.Bytes(), ExitCode: code}, nil
}

// probeLeftAfter is how long an exited probe container may wait for its
// run to read its output before a later probe removes it.
const probeLeftAfter = time.Minute

// probeOwner names this process for LabelProbeOwner.
func probeOwner() string {
	host, _ := os.Hostname()
	return host + ":" + strconv.Itoa(os.Getpid())
}

// ownerGone reports whether the roofline named by a LabelProbeOwner value
// is known to have exited: it ran on this host and its pid is gone. A
// probe of another host (a shared daemon) is never judged by pid.
func ownerGone(owner string) bool {
	i := strings.LastIndexByte(owner, ':')
	if i < 0 {
		return false
	}
	host, _ := os.Hostname()
	pid, err := strconv.Atoi(owner[i+1:])
	if owner[:i] != host || err != nil || pid <= 1 || pid == os.Getpid() {
		return false
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// SweepProbes removes the probe containers of runs that never removed
// theirs (roofline killed during a probe): at once when the run's process
// is known to be gone, else a minute after the container ended. Best
// effort.
func (d *Driver) SweepProbes(ctx context.Context) {
	list, err := d.C.ContainerList(ctx, LabelProbe+"=true")
	if err != nil {
		return
	}
	for _, s := range list {
		if s.State != "exited" && s.State != "created" && s.State != "dead" {
			continue
		}
		if ownerGone(s.Labels[LabelProbeOwner]) {
			_ = d.C.ContainerRemove(ctx, s.ID)
			continue
		}
		c, err := d.C.ContainerInspect(ctx, s.ID)
		if err != nil {
			continue
		}
		ended := c.FinishedAt()
		if ended.IsZero() {
			ended = parseTime(c.Created)
		}
		if !ended.IsZero() && time.Since(ended) > probeLeftAfter {
			_ = d.C.ContainerRemove(ctx, s.ID)
		}
	}
}
