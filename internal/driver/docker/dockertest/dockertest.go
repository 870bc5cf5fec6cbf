// Package dockertest gives tests a real Docker daemon and the rehearsal
// engine images that .ci/docker-setup.sh builds, or skips them with the way
// to get both. With ROOFLINE_DOCKER_REQUIRED=1 (CI) a missing daemon fails
// the test instead.
package dockertest

import (
	"bufio"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/driver/docker"
)

// DefaultImagesFile is where .ci/docker-setup.sh writes the image references.
const DefaultImagesFile = "/tmp/roofline-docker/images.env"

// Images are the rehearsal images by key: VLLM_0_16_0, VLLM_0_8_5,
// SGLANG_0_5_6_POST2 (each repo@sha256:... on this host) and ABSENT (in the
// local registry, not on this host).
type Images map[string]string

// Require returns a client of the daemon and the images, or skips t.
func Require(t testing.TB) (*docker.Client, Images) {
	t.Helper()
	path := os.Getenv("ROOFLINE_DOCKER_TEST_IMAGES")
	if path == "" {
		path = DefaultImagesFile
	}
	imgs, err := read(path)
	if err != nil {
		unavailable(t, "the rehearsal images are not built ("+err.Error()+")")
	}
	c, err := docker.NewClient("")
	if err != nil {
		unavailable(t, err.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Version(ctx); err != nil {
		unavailable(t, err.Error())
	}
	for _, k := range []string{"VLLM_0_16_0", "VLLM_0_8_5", "SGLANG_0_5_6_POST2", "ABSENT"} {
		if imgs[k] == "" {
			unavailable(t, path+" lacks "+k)
		}
	}
	return c, imgs
}

func unavailable(t testing.TB, why string) {
	t.Helper()
	msg := "docker tests need a Docker daemon and the rehearsal engine images: " + why +
		". Run `sudo .ci/docker-setup.sh` (and .ci/docker-teardown.sh after)"
	if os.Getenv("ROOFLINE_DOCKER_REQUIRED") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

func read(path string) (Images, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := Images{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			out[k] = v
		}
	}
	return out, sc.Err()
}
