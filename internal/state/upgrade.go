package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Format 1 kept a server's identity in loose fields (pid, pgid,
// container_id, ...) and the proxy's in a shape of its own. The types below
// are format 1 as it was written, read strictly (unknown fields are errors
// in every format) and then upgraded to the current types.

type fileV1 struct {
	FormatVersion   int                  `json:"format_version"`
	Serial          uint64               `json:"serial"`
	Lineage         string               `json:"lineage"`
	RooflineVersion string               `json:"roofline_version"`
	Servers         map[string]*serverV1 `json:"servers"`
}

type serverV1 struct {
	Name        string            `json:"name"`
	Engine      EngineRef         `json:"engine"`
	Model       ModelRef          `json:"model"`
	Argv        []string          `json:"argv"`
	Env         map[string]string `json:"env,omitempty"`
	CommandLen  int               `json:"command_len,omitempty"`
	GPUs        []int             `json:"gpus"`
	Host        string            `json:"host"`
	Port        int               `json:"port"`
	Driver      string            `json:"driver"`
	Image       string            `json:"image,omitempty"`
	PID         int               `json:"pid"`
	PGID        int               `json:"pgid"`
	StartTime   uint64            `json:"start_time"`
	BootID      string            `json:"boot_id"`
	Cmdline     []string          `json:"cmdline,omitempty"`
	LaunchID    string            `json:"launch_id,omitempty"`
	ContainerID string            `json:"container_id,omitempty"`
	LogPath     string            `json:"log_path"`
	Status      string            `json:"status"`
	CreatedAt   time.Time         `json:"created_at,omitzero"`
	ReadyAt     time.Time         `json:"ready_at,omitzero"`
	ConfigHash  string            `json:"config_hash"`
	GateHash    string            `json:"gate_hash,omitempty"`
	BackendPort int               `json:"backend_port,omitempty"`
	Proxy       *processV1        `json:"proxy,omitempty"`
	Deposed     *serverV1         `json:"deposed,omitempty"`
	Gate        *GateResult       `json:"gate,omitempty"`
	Footprint   *Footprint        `json:"footprint,omitempty"`
	Predicted   *Footprint        `json:"predicted,omitempty"`
}

type processV1 struct {
	ContainerID string   `json:"container_id,omitempty"`
	LaunchID    string   `json:"launch_id,omitempty"`
	PID         int      `json:"pid"`
	PGID        int      `json:"pgid"`
	StartTime   uint64   `json:"start_time"`
	BootID      string   `json:"boot_id"`
	Cmdline     []string `json:"cmdline,omitempty"`
	LogPath     string   `json:"log_path,omitempty"`
}

// decodeV1 reads a format 1 state and returns it in the current format.
// The upgraded state is written in the current format by the next command
// that writes (plan never does).
func decodeV1(data []byte) (*File, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var old fileV1
	if err := dec.Decode(&old); err != nil {
		return nil, jsonError(data, err)
	}
	f := &File{FormatVersion: CurrentFormat, Serial: old.Serial, Lineage: old.Lineage,
		RooflineVersion: old.RooflineVersion, Servers: make(map[string]*Server, len(old.Servers))}
	if old.FormatVersion != 1 {
		f.FormatVersion = old.FormatVersion // validate says what is wrong
	}
	for name, s := range old.Servers {
		for _, v := range []*serverV1{s, s.deposed()} {
			if v != nil && v.Driver != DriverProcess && v.Driver != DriverDocker {
				return nil, fmt.Errorf("servers[%q]: driver %q is not one of process, docker (the drivers of format 1)", name, v.Driver)
			}
		}
		f.Servers[name] = s.upgrade()
	}
	return f, nil
}

func (s *serverV1) deposed() *serverV1 {
	if s == nil {
		return nil
	}
	return s.Deposed
}

func (s *serverV1) upgrade() *Server {
	if s == nil {
		return nil
	}
	id := s.ContainerID
	if s.Driver == DriverProcess || (id == "" && s.Driver == "") {
		id = ProcessID(s.PID)
	}
	return &Server{
		Name: s.Name, Engine: s.Engine, Model: s.Model,
		Argv: s.Argv, Env: s.Env, CommandLen: s.CommandLen,
		GPUs: s.GPUs, Host: s.Host, Port: s.Port, Image: s.Image,
		Instance: Instance{Driver: s.Driver, ID: id, PID: s.PID, Group: s.PGID, StartTime: s.StartTime,
			BootID: s.BootID, Cmdline: s.Cmdline, LaunchID: s.LaunchID, LogPath: s.LogPath},
		Status: s.Status, CreatedAt: s.CreatedAt, ReadyAt: s.ReadyAt,
		ConfigHash: s.ConfigHash, GateHash: s.GateHash, BackendPort: s.BackendPort,
		Proxy: s.Proxy.upgrade(), Deposed: s.Deposed.upgrade(),
		Gate: s.Gate, Footprint: s.Footprint, Predicted: s.Predicted,
	}
}

// upgrade turns a format 1 proxy record into an Instance: format 1 had no
// driver field, a container id meant docker.
func (p *processV1) upgrade() *Instance {
	if p == nil {
		return nil
	}
	i := &Instance{Driver: DriverProcess, ID: ProcessID(p.PID), PID: p.PID, Group: p.PGID, StartTime: p.StartTime,
		BootID: p.BootID, Cmdline: p.Cmdline, LaunchID: p.LaunchID, LogPath: p.LogPath}
	if p.ContainerID != "" {
		i.Driver, i.ID = DriverDocker, p.ContainerID
	}
	return i
}
