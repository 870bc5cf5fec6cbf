package cli

import (
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
		Usage:    views.UsageModel,
		Run:      runModel,
	})
	register(&Command{
		Name:     "model inspect",
		Synopsis: "Show a model folder's architecture and completeness checks",
		Usage:    views.UsageModelInspect,
		Run:      runModelInspect,
	})
	register(&Command{
		Name:     "model manifest",
		Synopsis: "Write sha256 checksums of a model folder",
		Usage:    views.UsageModelManifest,
		Run:      runModelManifest,
	})
	register(&Command{
		Name:     "model verify",
		Synopsis: "Verify a model folder against its checksums",
		Usage:    views.UsageModelVerify,
		Run:      runModelVerify,
	})
	register(&Command{
		Name:     "model synth",
		Synopsis: "Write a synthetic sparse model folder for rehearsals and tests",
		Usage:    views.UsageModelSynth(modeltest.ArchNames()),
		Run:      runModelSynth,
	})
}

func runModel(m *Meta, args []string) int {
	subs := []string{"inspect", "manifest", "verify", "synth"}
	if len(args) == 0 {
		m.view().UsageErr(commands["model"].Usage)
		return ExitError
	}
	m.view().Errorf("unknown subcommand \"model %s\".%s\n\nRun \"roofline model -h\" for the list.", args[0], suggest.DidYouMean(args[0], subs))
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
		m.view().Errorf("%v", err)
		return ExitError
	}
	if err := views.NewModelInspect(views.TypeOf(*jsonOut), m.view()).Inspect(info, *withTensors); err != nil {
		m.view().Errorf("%v", err)
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
			m.view().Errorf("%v", err)
			return ExitError
		}
		return ExitOK
	}
	bar, progress := m.view().Progress("hashing", m.ErrTerminal)
	path, n, err := model.WriteManifest(dir, *out, progress)
	bar.Finish()
	if err != nil {
		m.view().Errorf("%v", err)
		return ExitError
	}
	m.view().ModelManifestWritten(n, path, dir)
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
	path, err := model.ChecksumsFor(dir, *sums)
	if err != nil {
		m.view().Errorf("%v", err)
		return ExitError
	}
	bar, progress := m.view().Progress("verifying", m.ErrTerminal)
	res, err := model.Verify(dir, path, progress)
	bar.Finish()
	if err != nil {
		m.view().Errorf("%v", err)
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
	a, err := modeltest.ArchNamed(*arch)
	if err != nil {
		return usageError(m, "model synth", err.Error())
	}
	opts, err := modeltest.SynthOptions(*shards, *layers, *dtype)
	if err != nil {
		return usageError(m, "model synth", err.Error())
	}
	if err := modeltest.WriteNew(dir, a, opts...); err != nil {
		m.view().Errorf("%v", err)
		return ExitError
	}
	info, err := model.Inspect(dir)
	if err != nil {
		m.view().Errorf("%v", err)
		return ExitError
	}
	m.view().ModelSynthWritten(a.Name, a.Repo, dir, info)
	return ExitOK
}
