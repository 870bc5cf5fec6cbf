package cli

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/roofline/roofline/internal/fsx"
	"github.com/roofline/roofline/internal/model"
	"github.com/roofline/roofline/internal/model/modeltest"
	"github.com/roofline/roofline/internal/suggest"
)

func init() {
	register(&Command{
		Name:     "model",
		Synopsis: "Inspect, checksum and verify model folders",
		Hidden:   true, // the subcommands are listed
		Usage: `Usage: roofline model <subcommand> [args]

Subcommands:
  inspect    Show a model folder's architecture and the completeness checks
  manifest   Write sha256 checksums of a model folder
  verify     Verify a model folder against its checksums
  synth      Write a synthetic sparse model folder (rehearsals and tests)
`,
		Run: runModel,
	})
	register(&Command{
		Name:     "model inspect",
		Synopsis: "Show a model folder's architecture and completeness checks",
		Usage: `Usage: roofline model inspect DIR [-json] [-tensors]

  Reads a model folder without reading its weights: config.json (the nested
  text_config of multimodal models), the header of every .safetensors shard
  and model.safetensors.index.json. Prints the architecture (parameters,
  bytes by dtype, layers, heads, KV heads, head dim, MoE, MLA, sliding window,
  quantization) and the completeness and air-gap checks: required files
  (config.json, tokenizer.json, tokenizer_config.json, generation_config.json),
  the chat template, truncated or missing shards, pickle weights.

  Exits 1 when a check found an error.

Options:
  -json      Print one JSON object.
  -tensors   With -json, include every tensor (name, dtype, shape, bytes, file).
`,
		Run: runModelInspect,
	})
	register(&Command{
		Name:     "model manifest",
		Synopsis: "Write sha256 checksums of a model folder",
		Usage: `Usage: roofline model manifest DIR [-o FILE]

  Writes the sha256 of every file in DIR in sha256sum format
  ("<hex>  <path relative to DIR>", sorted), so that the folder can be checked
  after a transfer with "roofline model verify" or "sha256sum -c". Names
  starting with a dot (.cache, .git) are skipped. Files are hashed in
  parallel; a progress bar shows on a terminal.

Options:
  -o FILE   Where to write (default: DIR.sha256 beside the folder, as in
            checksums = "/models/Qwen3-8B.sha256"); "-" writes to stdout.
`,
		Run: runModelManifest,
	})
	register(&Command{
		Name:     "model verify",
		Synopsis: "Verify a model folder against its checksums",
		Usage: `Usage: roofline model verify DIR [-checksums FILE] [-json]

  Hashes every file listed in the checksum file and compares. Missing files,
  files whose checksum differs and files in DIR that the list does not name
  are reported, and the exit status is 1. A progress bar shows on a terminal.

Options:
  -checksums FILE   The sha256sum-format list (default: DIR.sha256 beside the folder).
  -json             Print the result as JSON.
`,
		Run: runModelVerify,
	})
	register(&Command{
		Name:     "model synth",
		Synopsis: "Write a synthetic sparse model folder for rehearsals and tests",
		Usage: `Usage: roofline model synth -arch NAME DIR [-shards N] [-dtype bf16|fp8] [-layers N]

  Writes a stand-in model folder for rehearsals and tests: the real
  config.json values, tensor names and shapes of the architecture, valid
  safetensors headers and a small tokenizer with a chat template. The weights
  are sparse files of the real size that read as zeros and take no disk: the
  folder passes "roofline model inspect" and sizes like the real model in
  "roofline vram", but it cannot generate text.

  DIR must not exist or be empty.

Options:
  -arch NAME     One of: ` + strings.Join(modeltest.ArchNames(), ", ") + `.
  -shards N      Shard count (default: the real model's).
  -dtype D       bf16 or fp8 (F8_E4M3 with 128x128 block scales); default: the real model's.
  -layers N      Decoder layer count, for a smaller variant with real per-layer shapes.
`,
		Run: runModelSynth,
	})
}

func runModel(m *Meta, args []string) int {
	subs := []string{"inspect", "manifest", "verify", "synth"}
	if len(args) == 0 {
		fmt.Fprint(m.Err, commands["model"].Usage)
		return ExitError
	}
	fmt.Fprintf(m.Err, "Error: unknown subcommand \"model %s\".%s\n\nRun \"roofline model -h\" for the list.\n", args[0], suggest.DidYouMean(args[0], subs))
	return ExitError
}

// oneDir returns the single DIR argument.
func oneDir(m *Meta, cmd string, args []string) (string, bool) {
	switch len(args) {
	case 0:
		usageError(m, cmd, "missing the model folder: roofline "+cmd+" DIR")
		return "", false
	case 1:
		return args[0], true
	}
	usageError(m, cmd, "unexpected argument "+args[1])
	return "", false
}

// defaultChecksums is DIR.sha256 beside the folder: /models/Qwen3-8B ->
// /models/Qwen3-8B.sha256.
func defaultChecksums(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return filepath.Clean(dir) + ".sha256"
}

func runModelInspect(m *Meta, args []string) int {
	fs := newFlags("model inspect")
	jsonOut := fs.Bool("json", false, "")
	withTensors := fs.Bool("tensors", false, "")
	if !parseFlags(m, fs, args) {
		return ExitError
	}
	dir, ok := oneDir(m, "model inspect", fs.Args())
	if !ok {
		return ExitError
	}
	info, err := model.Inspect(dir)
	if err != nil {
		fmt.Fprintf(m.Err, "Error: %v\n", err)
		return ExitError
	}
	if *jsonOut {
		if err := writeInspectJSON(m.Out, info, *withTensors); err != nil {
			fmt.Fprintf(m.Err, "Error: %v\n", err)
			return ExitError
		}
	} else {
		writeInspect(m.Out, info)
	}
	if info.HasErrors() {
		return ExitError
	}
	return ExitOK
}

// inspectJSON is the -json object of model inspect.
type inspectJSON struct {
	Dir            string           `json:"dir"`
	OK             bool             `json:"ok"` // no error-level problems
	Config         *model.Config    `json:"config"`
	Params         int64            `json:"params"`
	WeightsBytes   int64            `json:"weights_bytes"`
	TotalBytes     int64            `json:"total_bytes"`
	IndexTotalSize int64            `json:"index_total_size,omitempty"`
	BytesByDtype   map[string]int64 `json:"bytes_by_dtype"`
	BytesByClass   map[string]int64 `json:"bytes_by_class"`
	BytesBySplit   map[string]int64 `json:"bytes_by_split"`
	LayerBytes     []int64          `json:"layer_bytes"`
	Shards         []model.Shard    `json:"shards"`
	Problems       []model.Problem  `json:"problems"`
	Tensors        []model.Tensor   `json:"tensors,omitempty"`
}

func writeInspectJSON(w io.Writer, info *model.Info, tensors bool) error {
	b := info.Breakdown()
	out := inspectJSON{
		Dir: info.Dir, OK: !info.HasErrors(), Config: info.Config, Params: b.Params,
		WeightsBytes: info.WeightsBytes(), TotalBytes: info.TotalBytes, IndexTotalSize: info.IndexTotalSize,
		BytesByDtype: b.ByDtype, BytesByClass: map[string]int64{}, BytesBySplit: map[string]int64{},
		LayerBytes: b.Layers, Shards: info.Shards, Problems: info.Problems,
	}
	for k, v := range b.ByClass {
		out.BytesByClass[string(k)] = v
	}
	for k, v := range b.BySplit {
		out.BytesBySplit[string(k)] = v
	}
	if out.Shards == nil {
		out.Shards = []model.Shard{}
	}
	if out.Problems == nil {
		out.Problems = []model.Problem{}
	}
	if tensors {
		out.Tensors = info.Tensors
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// gib formats bytes in GiB (2^30, as the engines print memory), small sizes in MiB.
func gib(n int64) string {
	if n < 1<<30 {
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
}

func params(n int64) string {
	if n < 1e9 {
		return fmt.Sprintf("%.2f M", float64(n)/1e6)
	}
	return fmt.Sprintf("%.2f B", float64(n)/1e9)
}

func writeInspect(w io.Writer, info *model.Info) {
	b := info.Breakdown()
	fmt.Fprintf(w, "Model %s\n", info.Dir)
	row := func(k, f string, a ...any) { fmt.Fprintf(w, "  %-15s %s\n", k, fmt.Sprintf(f, a...)) }
	if c := info.Config; c != nil {
		arch := strings.Join(c.Architectures, ", ")
		if arch == "" {
			arch = "(no architectures)"
		}
		row("Architecture", "%s (%s)", arch, c.ModelType)
	}
	row("Parameters", "%s (elements in the headers)", params(b.Params))
	dtypes := make([]string, 0, len(b.ByDtype))
	for d := range b.ByDtype {
		dtypes = append(dtypes, d)
	}
	slices.SortFunc(dtypes, func(x, y string) int {
		if c := cmp.Compare(b.ByDtype[y], b.ByDtype[x]); c != 0 {
			return c
		}
		return strings.Compare(x, y)
	})
	var parts []string
	for _, d := range dtypes {
		parts = append(parts, d+" "+gib(b.ByDtype[d]))
	}
	row("Weights", "%s in %d shard(s) (%s)", gib(info.WeightsBytes()), len(info.Shards), strings.Join(parts, ", "))
	row("Files", "%s in the folder", gib(info.TotalBytes))
	if c := info.Config; c != nil {
		row("Layers", "%d (hidden %d, intermediate %d)", c.NumHiddenLayers, c.HiddenSize, c.IntermediateSize)
		kind := "MHA"
		switch {
		case c.KVLoraRank > 0:
			kind = "MLA"
		case c.NumKeyValueHeads == 1:
			kind = "MQA"
		case c.NumKeyValueHeads < c.NumAttentionHeads:
			kind = "GQA"
		}
		row("Attention", "%d heads, %d KV heads, head dim %d (%s)", c.NumAttentionHeads, c.NumKeyValueHeads, c.HeadDim, kind)
		tied := "untied"
		if c.TieWordEmbeddings {
			tied = "tied"
		}
		row("Vocabulary", "%d, %s embeddings", c.VocabSize, tied)
		if c.MaxPositionEmbeddings > 0 {
			row("Context", "%d (max_position_embeddings)", c.MaxPositionEmbeddings)
		}
		if c.TorchDtype != "" {
			row("dtype", "%s", c.TorchDtype)
		}
		if c.NumExperts > 0 {
			s := fmt.Sprintf("%d experts, %d active, expert intermediate %d", c.NumExperts, c.NumExpertsPerTok, c.MoEIntermediateSize)
			if c.NumSharedExperts > 0 {
				s += fmt.Sprintf(", %d shared", c.NumSharedExperts)
			}
			if c.FirstKDenseReplace > 0 {
				s += fmt.Sprintf(", first %d layers dense", c.FirstKDenseReplace)
			}
			row("MoE", "%s; experts %s", s, gib(b.ByClass[model.ClassExpert]))
		}
		if c.KVLoraRank > 0 {
			row("MLA", "kv_lora_rank %d, q_lora_rank %d, rope dim %d, nope dim %d, v dim %d", c.KVLoraRank, c.QLoraRank, c.QKRopeHeadDim, c.QKNopeHeadDim, c.VHeadDim)
		}
		if len(c.LayerTypes) > 0 {
			counts := map[string]int{}
			var kinds []string
			for _, t := range c.LayerTypes {
				if counts[t] == 0 {
					kinds = append(kinds, t)
				}
				counts[t]++
			}
			var ks []string
			for _, k := range kinds {
				ks = append(ks, fmt.Sprintf("%d %s", counts[k], k))
			}
			s := strings.Join(ks, ", ")
			if c.SlidingWindow > 0 {
				s = fmt.Sprintf("window %d; %s", c.SlidingWindow, s)
			}
			row("Layer types", "%s", s)
		}
		if q := c.Quantization; q != nil {
			var qs []string
			if q.Format != "" {
				qs = append(qs, q.Format)
			}
			if q.Bits > 0 {
				qs = append(qs, fmt.Sprintf("%d bits", q.Bits))
			}
			if q.GroupSize > 0 {
				qs = append(qs, fmt.Sprintf("group %d", q.GroupSize))
			}
			if len(q.WeightBlockSize) == 2 {
				qs = append(qs, fmt.Sprintf("blocks %dx%d", q.WeightBlockSize[0], q.WeightBlockSize[1]))
			}
			s := q.Method
			if len(qs) > 0 {
				s += " (" + strings.Join(qs, ", ") + ")"
			}
			row("Quantization", "%s", s)
		}
		if c.Multimodal {
			row("Multimodal", "yes: language model facts from text_config; vision %s", gib(b.ByClass[model.ClassVision]))
		}
		if mtp := b.ByClass[model.ClassMTP]; mtp > 0 {
			row("MTP layers", "%s (loaded only for MTP speculative decoding)", gib(mtp))
		}
	}
	fmt.Fprintln(w)
	if len(info.Problems) == 0 {
		fmt.Fprintln(w, "No problems found.")
		return
	}
	errs := 0
	for _, p := range info.Problems {
		label := "Warning"
		if p.Severity == model.SeverityError {
			label = "Error"
			errs++
		}
		fmt.Fprintf(w, "%s: %s\n", label, p.Summary)
		if p.Detail != "" {
			fmt.Fprintf(w, "  %s\n", p.Detail)
		}
	}
	fmt.Fprintf(w, "\n%d error(s), %d warning(s).\n", errs, len(info.Problems)-errs)
}

// progressBar draws hashing progress on a terminal, at most ten times a second.
type progressBar struct {
	w     io.Writer
	label string
	start time.Time
	last  time.Time
	drawn bool
}

func newProgressBar(m *Meta, label string) (*progressBar, model.Progress) {
	if !m.ErrTerminal {
		return nil, nil
	}
	p := &progressBar{w: m.Err, label: label, start: time.Now()}
	return p, p.update
}

func (p *progressBar) update(done, total int64) {
	now := time.Now()
	if done < total && now.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last = now
	pct := 100.0
	if total > 0 {
		pct = 100 * float64(done) / float64(total)
	}
	const width = 30
	fill := int(pct / 100 * width)
	rate := float64(done) / max(now.Sub(p.start).Seconds(), 1e-3) / 1e6
	fmt.Fprintf(p.w, "\r%s [%s%s] %5.1f%%  %s / %s  %.0f MB/s ", p.label,
		strings.Repeat("=", fill), strings.Repeat(" ", width-fill), pct, gib(done), gib(total), rate)
	p.drawn = true
}

func (p *progressBar) finish() {
	if p != nil && p.drawn {
		fmt.Fprintln(p.w)
	}
}

func runModelManifest(m *Meta, args []string) int {
	fs := newFlags("model manifest")
	out := fs.StringP("out", "o", "", "")
	if !parseFlags(m, fs, args) {
		return ExitError
	}
	dir, ok := oneDir(m, "model manifest", fs.Args())
	if !ok {
		return ExitError
	}
	if *out == "-" {
		if err := model.Manifest(dir, m.Out, nil); err != nil {
			fmt.Fprintf(m.Err, "Error: %v\n", err)
			return ExitError
		}
		return ExitOK
	}
	path := *out
	if path == "" {
		path = defaultChecksums(dir)
	}
	// Written beside the target and renamed, so an interrupted run never
	// leaves a partial list that verify would trust.
	bar, progress := newProgressBar(m, "hashing")
	err := fsx.Write(path, 0o644, func(w io.Writer) error {
		return model.Manifest(dir, w, progress)
	})
	bar.finish()
	if err != nil {
		fmt.Fprintf(m.Err, "Error: %v\n", err)
		return ExitError
	}
	data, _ := os.ReadFile(path)
	fmt.Fprintf(m.Out, "Wrote %d checksums to %s\nCheck the folder after a transfer with: roofline model verify %s -checksums %s\n",
		strings.Count(string(data), "\n"), path, dir, path)
	return ExitOK
}

func runModelVerify(m *Meta, args []string) int {
	fs := newFlags("model verify")
	sums := fs.String("checksums", "", "")
	jsonOut := fs.Bool("json", false, "")
	if !parseFlags(m, fs, args) {
		return ExitError
	}
	dir, ok := oneDir(m, "model verify", fs.Args())
	if !ok {
		return ExitError
	}
	if *sums == "" {
		*sums = defaultChecksums(dir)
		if _, err := os.Stat(*sums); err != nil {
			fmt.Fprintf(m.Err, "Error: no checksum file at %s: pass -checksums FILE, or write one on the source machine with \"roofline model manifest %s\"\n", *sums, dir)
			return ExitError
		}
	}
	bar, progress := newProgressBar(m, "verifying")
	res, err := model.Verify(dir, *sums, progress)
	bar.finish()
	if err != nil {
		fmt.Fprintf(m.Err, "Error: %v\n", err)
		return ExitError
	}
	if *jsonOut {
		enc := json.NewEncoder(m.Out)
		enc.SetIndent("", "  ")
		_ = enc.Encode(struct {
			OK bool `json:"ok"`
			*model.VerifyResult
		}{res.OK(), res})
	} else {
		writeVerify(m.Out, dir, res)
	}
	if !res.OK() {
		return ExitError
	}
	return ExitOK
}

func writeVerify(w io.Writer, dir string, res *model.VerifyResult) {
	for _, f := range res.Mismatched {
		fmt.Fprintf(w, "MISMATCH  %s\n          want %s\n          got  %s\n", f.File, f.Want, f.Got)
	}
	for _, f := range res.Missing {
		fmt.Fprintf(w, "MISSING   %s\n", f)
	}
	for _, f := range res.Extra {
		fmt.Fprintf(w, "EXTRA     %s (not in the checksum list)\n", f)
	}
	if res.OK() {
		fmt.Fprintf(w, "OK: %d files, %s, match their checksums.\n", res.Checked, gib(res.Bytes))
		return
	}
	fmt.Fprintf(w, "\nFAILED: %d mismatched, %d missing, %d extra of %d files checked in %s.\n",
		len(res.Mismatched), len(res.Missing), len(res.Extra), res.Checked, dir)
	fmt.Fprintln(w, "Copy the mismatched and missing files again from the source; remove extra files or rewrite the list with roofline model manifest.")
}

func runModelSynth(m *Meta, args []string) int {
	fs := newFlags("model synth")
	arch := fs.String("arch", "", "")
	shards := fs.Int("shards", 0, "")
	dtype := fs.String("dtype", "", "")
	layers := fs.Int("layers", 0, "")
	if !parseFlags(m, fs, args) {
		return ExitError
	}
	dir, ok := oneDir(m, "model synth", fs.Args())
	if !ok {
		return ExitError
	}
	names := modeltest.ArchNames()
	a, found := modeltest.Arches()[*arch]
	if !found {
		msg := "-arch is required"
		if *arch != "" {
			msg = fmt.Sprintf("unknown architecture %q.%s", *arch, suggest.DidYouMean(*arch, names))
		}
		return usageError(m, "model synth", msg+" Architectures: "+strings.Join(names, ", "))
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		fmt.Fprintf(m.Err, "Error: %s is not empty; synth writes only into a new or empty folder, so that it never overwrites a real model\n", dir)
		return ExitError
	}
	var opts []modeltest.Option
	if *shards < 0 || *layers < 0 {
		return usageError(m, "model synth", "-shards and -layers must be positive")
	}
	if *dtype != "" && *dtype != "bf16" && *dtype != "fp8" {
		return usageError(m, "model synth", fmt.Sprintf("-dtype %q: want bf16 or fp8", *dtype))
	}
	if *shards > 0 {
		opts = append(opts, modeltest.Shards(*shards))
	}
	if *layers > 0 {
		opts = append(opts, modeltest.Layers(*layers))
	}
	if *dtype != "" {
		opts = append(opts, modeltest.Dtype(*dtype))
	}
	if err := modeltest.Write(dir, a, opts...); err != nil {
		fmt.Fprintf(m.Err, "Error: %v\n", err)
		return ExitError
	}
	info, err := model.Inspect(dir)
	if err != nil {
		fmt.Fprintf(m.Err, "Error: %v\n", err)
		return ExitError
	}
	fmt.Fprintf(m.Out, "Wrote a synthetic %s (%s) to %s: %s of sparse weights in %d shard(s).\nIt stands in for rehearsals and tests; it cannot generate text.\n",
		a.Name, a.Repo, dir, gib(info.WeightsBytes()), len(info.Shards))
	return ExitOK
}
