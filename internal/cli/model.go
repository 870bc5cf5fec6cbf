package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/roofline/roofline/internal/fsx"
	"github.com/roofline/roofline/internal/model"
	"github.com/roofline/roofline/internal/model/modeltest"
	"github.com/roofline/roofline/internal/suggest"
	"github.com/roofline/roofline/internal/views"
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
	if err := views.NewModelInspect(views.TypeOf(*jsonOut), m.view()).Inspect(info, *withTensors); err != nil {
		fmt.Fprintf(m.Err, "Error: %v\n", err)
		return ExitError
	}
	if info.HasErrors() {
		return ExitError
	}
	return ExitOK
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
	bar, progress := m.view().Progress("hashing", m.ErrTerminal)
	err := fsx.Write(path, 0o644, func(w io.Writer) error {
		return model.Manifest(dir, w, progress)
	})
	bar.Finish()
	if err != nil {
		fmt.Fprintf(m.Err, "Error: %v\n", err)
		return ExitError
	}
	data, _ := os.ReadFile(path)
	m.view().ModelManifestWritten(strings.Count(string(data), "\n"), path, dir)
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
	bar, progress := m.view().Progress("verifying", m.ErrTerminal)
	res, err := model.Verify(dir, *sums, progress)
	bar.Finish()
	if err != nil {
		fmt.Fprintf(m.Err, "Error: %v\n", err)
		return ExitError
	}
	views.NewModelVerify(views.TypeOf(*jsonOut), m.view()).Verify(dir, res)
	if !res.OK() {
		return ExitError
	}
	return ExitOK
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
	m.view().ModelSynthWritten(a.Name, a.Repo, dir, info)
	return ExitOK
}
