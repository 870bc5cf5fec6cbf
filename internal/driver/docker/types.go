package docker

import "time"

// ContainerConfig is the body of POST /containers/create: the container's
// own settings with the host settings inside, as the Engine API nests them.
// Only the fields roofline sets are declared.
type ContainerConfig struct {
	Image      string            `json:"Image"`
	Entrypoint []string          `json:"Entrypoint"`
	Cmd        []string          `json:"Cmd"`
	Env        []string          `json:"Env,omitempty"`
	Labels     map[string]string `json:"Labels,omitempty"`
	StopSignal string            `json:"StopSignal,omitempty"`
	HostConfig HostConfig        `json:"HostConfig"`
}

// HostConfig is the host side of a container.
type HostConfig struct {
	NetworkMode    string          `json:"NetworkMode,omitempty"`
	IpcMode        string          `json:"IpcMode,omitempty"`
	ShmSize        int64           `json:"ShmSize,omitempty"`
	Init           *bool           `json:"Init,omitempty"`
	RestartPolicy  RestartPolicy   `json:"RestartPolicy"`
	LogConfig      LogConfig       `json:"LogConfig"`
	Mounts         []Mount         `json:"Mounts,omitempty"`
	DeviceRequests []DeviceRequest `json:"DeviceRequests,omitempty"`
	Ulimits        []Ulimit        `json:"Ulimits,omitempty"`
	AutoRemove     bool            `json:"AutoRemove,omitempty"`
}

// RestartPolicy is "no" for roofline's containers: roofline restarts them.
type RestartPolicy struct {
	Name string `json:"Name"`
}

// LogConfig selects the container's log driver.
type LogConfig struct {
	Type   string            `json:"Type"`
	Config map[string]string `json:"Config,omitempty"`
}

// Mount is a bind mount.
type Mount struct {
	Type     string `json:"Type"`
	Source   string `json:"Source"`
	Target   string `json:"Target"`
	ReadOnly bool   `json:"ReadOnly,omitempty"`
}

// DeviceRequest is `--gpus`: driver "nvidia", DeviceIDs the GPU indexes,
// capability "gpu". Count and DeviceIDs are exclusive.
type DeviceRequest struct {
	Driver       string     `json:"Driver"`
	Count        int        `json:"Count,omitempty"`
	DeviceIDs    []string   `json:"DeviceIDs,omitempty"`
	Capabilities [][]string `json:"Capabilities"`
}

// Ulimit is one resource limit (--ulimit name=soft:hard).
type Ulimit struct {
	Name string `json:"Name"`
	Soft int64  `json:"Soft"`
	Hard int64  `json:"Hard"`
}

// Image is what GET /images/{name}/json returns (the fields roofline reads).
type Image struct {
	ID          string   `json:"Id"`
	RepoTags    []string `json:"RepoTags"`
	RepoDigests []string `json:"RepoDigests"`
	Size        int64    `json:"Size"`
	Config      struct {
		Entrypoint []string `json:"Entrypoint"`
		Cmd        []string `json:"Cmd"`
	} `json:"Config"`
}

// Container is what GET /containers/{id}/json returns (the fields roofline
// reads).
type Container struct {
	ID      string `json:"Id"`
	Name    string `json:"Name"` // with a leading "/"
	Image   string `json:"Image"`
	Created string `json:"Created"`
	State   struct {
		Status     string `json:"Status"` // created, running, exited, ...
		Running    bool   `json:"Running"`
		Restarting bool   `json:"Restarting"`
		OOMKilled  bool   `json:"OOMKilled"`
		Dead       bool   `json:"Dead"`
		Pid        int    `json:"Pid"`
		ExitCode   int    `json:"ExitCode"`
		Error      string `json:"Error"`
		StartedAt  string `json:"StartedAt"`
		FinishedAt string `json:"FinishedAt"`
	} `json:"State"`
	RestartCount int `json:"RestartCount"`
	Config       struct {
		Image      string            `json:"Image"`
		Env        []string          `json:"Env"`
		Entrypoint []string          `json:"Entrypoint"`
		Cmd        []string          `json:"Cmd"`
		Labels     map[string]string `json:"Labels"`
	} `json:"Config"`
	HostConfig HostConfig `json:"HostConfig"`
}

// StartedAt is the container's last start, zero when it never started.
func (c *Container) StartedAt() time.Time { return parseTime(c.State.StartedAt) }

// FinishedAt is when it last stopped, zero while it runs.
func (c *Container) FinishedAt() time.Time { return parseTime(c.State.FinishedAt) }

// parseTime reads the daemon's RFC 3339 times; Go's zero time is what the
// daemon prints for "never" (0001-01-01T00:00:00Z).
func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.Year() <= 1 {
		return time.Time{}
	}
	return t
}

// ContainerSummary is one row of GET /containers/json.
type ContainerSummary struct {
	ID     string            `json:"Id"`
	Names  []string          `json:"Names"`
	Image  string            `json:"Image"`
	State  string            `json:"State"`
	Status string            `json:"Status"`
	Labels map[string]string `json:"Labels"`
}
