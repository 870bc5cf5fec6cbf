// Package docker is the driver for engines run as Docker containers.
//
// It speaks the Docker Engine API over the daemon's socket with net/http
// instead of the official Go client: roofline needs a dozen endpoints whose
// JSON has not changed since API 1.41, while the client module brings in
// OpenTelemetry, containerd and OCI modules and, in its new moby/moby/client
// form, an API still changing between v0 releases (docs/docker.md).
//
// A container is one instance of one server: named roofline-SERVER-LAUNCHID,
// labelled with the server's address, the state's lineage and directory, the
// config hash and the launch id, on the host network and IPC namespace, with
// docker-init as PID 1, no restart policy, a rotated json-file log, the
// model folder mounted read-only at its own path and its GPUs as an NVIDIA
// device request. Its identity is the container id plus its start time: a
// container restarted by hand (docker restart) keeps its id but is no longer
// the process roofline started and checked.
package docker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// API versions: MaxAPIVersion is the newest this client speaks (the request
// and answer fields it uses are the same from 1.41 on); MinAPIVersion is the
// oldest daemon it accepts (device requests, for --gpus, came in 1.40).
const (
	MaxAPIVersion = "1.47"
	MinAPIVersion = "1.40"
)

// DefaultHost is the daemon's socket when DOCKER_HOST is unset.
const DefaultHost = "unix:///var/run/docker.sock"

// Client talks to one Docker daemon. The zero value is not usable; call
// NewClient. It is safe for concurrent use.
type Client struct {
	host string // as given: unix:///path or tcp://host:port
	base string // http://docker or http://host:port
	http *http.Client

	mu      sync.Mutex
	version string // negotiated API version, "" until the first call
}

// NewClient returns a client for host ("" means DOCKER_HOST, else
// DefaultHost). Nothing is dialled until the first call.
func NewClient(host string) (*Client, error) {
	if host == "" {
		host = os.Getenv("DOCKER_HOST")
	}
	if host == "" {
		host = DefaultHost
	}
	if os.Getenv("DOCKER_TLS_VERIFY") != "" && !strings.HasPrefix(host, "unix://") {
		return nil, fmt.Errorf("DOCKER_HOST=%s with TLS: roofline talks to the daemon on the local socket only; unset DOCKER_HOST (the engines run on this host's GPUs anyway)", host)
	}
	c := &Client{host: host}
	switch {
	case strings.HasPrefix(host, "unix://"):
		path := strings.TrimPrefix(host, "unix://")
		tr := &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", path)
			},
			MaxIdleConns:    8,
			IdleConnTimeout: 30 * time.Second,
		}
		c.base, c.http = "http://docker", &http.Client{Transport: tr}
	case strings.HasPrefix(host, "tcp://"):
		c.base, c.http = "http://"+strings.TrimPrefix(host, "tcp://"), &http.Client{}
	default:
		return nil, fmt.Errorf("DOCKER_HOST=%q: roofline understands unix:///path/to/docker.sock and tcp://host:port", host)
	}
	return c, nil
}

// Host is the daemon address the client talks to.
func (c *Client) Host() string { return c.host }

// APIError is an error answer of the daemon.
type APIError struct {
	Status  int
	Message string
	Op      string // "create container", "inspect image", ...
}

func (e *APIError) Error() string {
	return fmt.Sprintf("docker %s: %s (HTTP %d)", e.Op, e.Message, e.Status)
}

// IsNotFound reports whether err is the daemon's 404: no such container or image.
func IsNotFound(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound
}

// IsConflict reports whether err is the daemon's 409 (a name in use).
func IsConflict(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == http.StatusConflict
}

// UnreachableError is a daemon that did not answer.
type UnreachableError struct {
	Host string
	Err  error
}

func (e *UnreachableError) Error() string {
	hint := "start it (systemctl start docker), or set DOCKER_HOST to where it listens"
	if errors.Is(e.Err, os.ErrPermission) {
		hint = "run roofline as a user in the docker group, or as root"
	}
	return fmt.Sprintf("cannot reach the Docker daemon at %s: %v; %s", e.Host, e.Err, hint)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// Version negotiates the API version with the daemon (once) and returns it:
// the lower of MaxAPIVersion and the daemon's own.
func (c *Client) Version(ctx context.Context) (string, error) {
	c.mu.Lock()
	v := c.version
	c.mu.Unlock()
	if v != "" {
		return v, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/_ping", nil)
	if err != nil {
		return "", err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return "", &UnreachableError{Host: c.host, Err: unwrapURL(err)}
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<10))
	resp.Body.Close()
	daemon := resp.Header.Get("Api-Version")
	if resp.StatusCode != http.StatusOK || daemon == "" {
		return "", &UnreachableError{Host: c.host, Err: fmt.Errorf("/_ping answered HTTP %d without an API version; is this a Docker daemon?", resp.StatusCode)}
	}
	v = MaxAPIVersion
	if compareVersions(daemon, v) < 0 {
		v = daemon
	}
	if compareVersions(v, MinAPIVersion) < 0 {
		return "", fmt.Errorf("the Docker daemon at %s speaks API %s; roofline needs %s or newer (Docker 19.03+) for GPU device requests: upgrade Docker", c.host, daemon, MinAPIVersion)
	}
	c.mu.Lock()
	c.version = v
	c.mu.Unlock()
	return v, nil
}

// compareVersions compares dotted API versions ("1.41" < "1.47").
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(as), len(bs)); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// do sends one API request and returns the open response for 2xx answers
// (the caller closes the body); other statuses become *APIError.
func (c *Client) do(ctx context.Context, op, method, path string, query url.Values, body any) (*http.Response, error) {
	v, err := c.Version(ctx)
	if err != nil {
		return nil, err
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	u, err := url.Parse(c.base)
	if err != nil {
		return nil, err
	}
	u.Path = "/v" + v + path
	u.RawQuery = query.Encode()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("docker %s: %w", op, ctx.Err())
		}
		return nil, &UnreachableError{Host: c.host, Err: unwrapURL(err)}
	}
	if resp.StatusCode/100 == 2 || resp.StatusCode == http.StatusNotModified {
		return resp, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var msg struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(b, &msg) != nil || msg.Message == "" {
		msg.Message = strings.TrimSpace(string(b))
	}
	return nil, &APIError{Status: resp.StatusCode, Message: msg.Message, Op: op}
}

// call sends a request and decodes a JSON answer into out (nil: discard).
func (c *Client) call(ctx context.Context, op, method, path string, query url.Values, body, out any) error {
	resp, err := c.do(ctx, op, method, path, query, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil || resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(out); err != nil {
		return fmt.Errorf("docker %s: unreadable answer: %w", op, err)
	}
	return nil
}

// ImageInspect returns the local image ref (a name, name:tag, name@digest or
// id). A missing image is a *APIError with IsNotFound true; nothing is pulled.
func (c *Client) ImageInspect(ctx context.Context, ref string) (*Image, error) {
	var img Image
	if err := c.call(ctx, "inspect image", http.MethodGet, "/images/"+ref+"/json", nil, nil, &img); err != nil {
		return nil, err
	}
	return &img, nil
}

// ContainerCreate creates (does not start) a container named name ("" for
// a name the daemon picks) and returns its id.
func (c *Client) ContainerCreate(ctx context.Context, name string, cfg *ContainerConfig) (string, error) {
	q := url.Values{}
	if name != "" {
		q.Set("name", name)
	}
	var out struct {
		ID       string   `json:"Id"`
		Warnings []string `json:"Warnings"`
	}
	if err := c.call(ctx, "create container", http.MethodPost, "/containers/create", q, cfg, &out); err != nil {
		return "", err
	}
	return out.ID, nil
}

// ContainerStart starts a created container.
func (c *Client) ContainerStart(ctx context.Context, id string) error {
	return c.call(ctx, "start container", http.MethodPost, "/containers/"+id+"/start", nil, nil, nil)
}

// ContainerInspect returns a container by id or name.
func (c *Client) ContainerInspect(ctx context.Context, id string) (*Container, error) {
	var out Container
	if err := c.call(ctx, "inspect container", http.MethodGet, "/containers/"+id+"/json", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ContainerList lists containers, stopped ones too, whose labels match
// every "key=value" (or "key") in labels.
func (c *Client) ContainerList(ctx context.Context, labels ...string) ([]ContainerSummary, error) {
	q := url.Values{"all": {"1"}}
	if len(labels) > 0 {
		f, _ := json.Marshal(map[string][]string{"label": labels})
		q.Set("filters", string(f))
	}
	var out []ContainerSummary
	if err := c.call(ctx, "list containers", http.MethodGet, "/containers/json", q, nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// ContainerStop sends the container's stop signal, waits up to grace (the
// daemon counts whole seconds), then kills it. A stopped container is not an
// error.
func (c *Client) ContainerStop(ctx context.Context, id string, grace time.Duration) error {
	secs := int((grace + time.Second - 1) / time.Second)
	return c.call(ctx, "stop container", http.MethodPost, "/containers/"+id+"/stop", url.Values{"t": {strconv.Itoa(secs)}}, nil, nil)
}

// ContainerKill sends signal ("SIGKILL", "SIGTERM", ...) to the container.
func (c *Client) ContainerKill(ctx context.Context, id, signal string) error {
	return c.call(ctx, "kill container", http.MethodPost, "/containers/"+id+"/kill", url.Values{"signal": {signal}}, nil, nil)
}

// ContainerRemove removes a container, killing it first if it runs.
func (c *Client) ContainerRemove(ctx context.Context, id string) error {
	return c.call(ctx, "remove container", http.MethodDelete, "/containers/"+id, url.Values{"force": {"1"}, "v": {"1"}}, nil, nil)
}

// ContainerWait waits until the container is not running and returns its
// exit status.
func (c *Client) ContainerWait(ctx context.Context, id string) (int, error) {
	var out struct {
		StatusCode int `json:"StatusCode"`
		Error      *struct {
			Message string `json:"Message"`
		} `json:"Error"`
	}
	if err := c.call(ctx, "wait for container", http.MethodPost, "/containers/"+id+"/wait", url.Values{"condition": {"not-running"}}, nil, &out); err != nil {
		return -1, err
	}
	if out.Error != nil && out.Error.Message != "" {
		return out.StatusCode, fmt.Errorf("docker wait for container: %s", out.Error.Message)
	}
	return out.StatusCode, nil
}

// ContainerLogs opens the container's log stream: stdout and stderr in the
// daemon's multiplexed framing (see Demux), each line prefixed with its
// RFC 3339 time when timestamps is set, from since on (zero: all).
func (c *Client) ContainerLogs(ctx context.Context, id string, since time.Time, timestamps bool) (io.ReadCloser, error) {
	q := url.Values{"stdout": {"1"}, "stderr": {"1"}}
	if timestamps {
		q.Set("timestamps", "1")
	}
	if !since.IsZero() {
		q.Set("since", fmt.Sprintf("%d.%09d", since.Unix(), since.Nanosecond()))
	}
	resp, err := c.do(ctx, "read container logs", http.MethodGet, "/containers/"+id+"/logs", q, nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// ContainerTop returns the host pids of the container's processes.
func (c *Client) ContainerTop(ctx context.Context, id string) ([]int, error) {
	var out struct {
		Titles    []string   `json:"Titles"`
		Processes [][]string `json:"Processes"`
	}
	if err := c.call(ctx, "list container processes", http.MethodGet, "/containers/"+id+"/top", nil, nil, &out); err != nil {
		return nil, err
	}
	col := -1
	for i, t := range out.Titles {
		if t == "PID" {
			col = i
		}
	}
	if col < 0 {
		return nil, fmt.Errorf("docker top: no PID column in %q", out.Titles)
	}
	var pids []int
	for _, p := range out.Processes {
		if col < len(p) {
			if pid, err := strconv.Atoi(p[col]); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids, nil
}
