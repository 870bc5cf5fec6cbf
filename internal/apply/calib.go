package apply

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/engine/logdiag"
	"github.com/roofline/roofline/internal/plan"
	"github.com/roofline/roofline/internal/state"
)

// recordCalibration keeps what the engine measured at this start, keyed as
// plan keyed its prediction, so that the next plan predicts from it. A start
// whose log lacks the KV figures records nothing; a failed write only costs
// the calibration (the note says so).
func (a *Applier) recordCalibration(ctx context.Context, addr string, d *plan.Desired, rec *state.Server, fp *logdiag.Footprint, t Target) {
	c := d.Calibration
	if c == nil || fp == nil || fp.KVCacheGiB == nil || a.StateDir == "" {
		return
	}
	tokens := int64(0)
	switch {
	case fp.KVTokens != nil:
		tokens = *fp.KVTokens
	case fp.GPUBlocks != nil && c.Key.BlockSize > 0:
		tokens = *fp.GPUBlocks * int64(c.Key.BlockSize) // vLLM V0 logs blocks
	}
	if tokens <= 0 {
		return
	}
	bytes := func(gib float64) int64 { return int64(math.Round(gib * (1 << 30))) }
	cal := state.Calibration{Key: c.Key, Arch: c.Arch, Server: d.Name, LaunchID: rec.LaunchID, At: a.now().UTC(),
		KVBudgetBytes: bytes(*fp.KVCacheGiB), KVTokens: tokens, WeightsBytes: c.BareWeightsBytes,
		RequestedBytes: c.RequestedBytes, PredictedWeightsBytes: c.BareWeightsBytes,
		PredictedOverheadBytes: c.BareOverheadBytes, PredictedKVBudgetBytes: c.BareKVBudgetBytes,
		PredictedKVTokens: c.BareKVTokens, PredictedAs: c.Status}
	if fp.WeightsGiB != nil {
		cal.WeightsBytes = bytes(*fp.WeightsGiB)
	}
	if fp.MaxConcurrency != nil {
		cal.MaxConcurrency = *fp.MaxConcurrency
	}
	if k := engine.Lookup(t.Engine); k != nil && k.CacheConfigMetric != "" {
		cal.CacheConfigBlocks, cal.CacheConfigTokens = cacheConfigInfo(ctx, t.BaseURL, k.CacheConfigMetric)
	}
	if d.AutoMaxModelLen > 0 {
		// max_model_len = "auto": what the engine picked is in /v1/models.
		cal.PredictedMaxModelLen = d.AutoMaxModelLen
		cal.PickedMaxModelLen = servedMaxModelLen(ctx, t)
		if prev, err := state.ReadCalibrations(a.StateDir); err == nil {
			if p := prev.Exact(c.Key); p != nil && p.PickedMaxModelLen > 0 {
				cal.PreviousPickedMaxModelLen = p.PickedMaxModelLen
			}
		}
		switch {
		case cal.PickedMaxModelLen == 0:
			a.note(addr, "max_model_len = \"auto\": /v1/models did not say which context the engine picked")
		case cal.PreviousPickedMaxModelLen > 0 && cal.PreviousPickedMaxModelLen != cal.PickedMaxModelLen:
			a.note(addr, "Drift: max_model_len = \"auto\" picked %d tokens; the previous start with the same settings picked %d", cal.PickedMaxModelLen, cal.PreviousPickedMaxModelLen)
		case cal.PickedMaxModelLen != cal.PredictedMaxModelLen:
			a.note(addr, "max_model_len = \"auto\" picked %d tokens; plan predicted %d (recorded: the next plan uses it)", cal.PickedMaxModelLen, cal.PredictedMaxModelLen)
		}
	}
	if err := state.RecordCalibration(a.StateDir, cal); err != nil {
		a.note(addr, "Could not record the start's memory figures (the next plan stays %s): %v", c.Status, err)
	}
}

// servedMaxModelLen reads max_model_len from /v1/models (0 when missing).
func servedMaxModelLen(ctx context.Context, t Target) int {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(t.BaseURL, "/")+"/v1/models", nil)
	if err != nil {
		return 0
	}
	if t.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+t.APIKey)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			ID          string `json:"id"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&list) != nil {
		return 0
	}
	for _, m := range list.Data {
		if m.ID == t.Model || t.Model == "" {
			return m.MaxModelLen
		}
	}
	if len(list.Data) > 0 {
		return list.Data[0].MaxModelLen
	}
	return 0
}

var labelPair = regexp.MustCompile(`(\w+)="([^"]*)"`)

// cacheConfigInfo reads the series metric (vllm:cache_config_info) from
// /metrics: the number of GPU blocks and, where the version has it (vLLM PR
// 42206), the KV size in tokens. Zeros when the series is missing.
func cacheConfigInfo(ctx context.Context, base, metric string) (blocks, tokens int64) {
	cacheInfoLine := regexp.MustCompile(`^` + regexp.QuoteMeta(metric) + `\{(.*)\}\s`)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/metrics", nil)
	if err != nil {
		return 0, 0
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, 0
	}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 8<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		m := cacheInfoLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		for _, p := range labelPair.FindAllStringSubmatch(m[1], -1) {
			v, _ := strconv.ParseInt(p[2], 10, 64)
			switch p[1] {
			case "num_gpu_blocks":
				blocks = v
			case "kv_cache_size_tokens":
				tokens = v
			}
		}
		return blocks, tokens
	}
	return 0, 0
}
