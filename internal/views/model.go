package views

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/roofline/roofline/internal/model"
)

// ModelInspect is roofline model inspect's view.
type ModelInspect interface {
	// Inspect prints the model folder's facts and problems; tensors (with
	// -json) adds every tensor.
	Inspect(info *model.Info, tensors bool) error
}

// NewModelInspect returns the model inspect view of type vt.
func NewModelInspect(vt ViewType, v *View) ModelInspect {
	if vt == ViewJSON {
		return ModelInspectJSON{v}
	}
	return ModelInspectHuman{v}
}

// ModelInspectJSON prints one JSON object.
type ModelInspectJSON struct{ view *View }

func (m ModelInspectJSON) Inspect(info *model.Info, tensors bool) error {
	return writeEscaped(m.view.Out, ModelInspectDocumentOf(info, tensors))
}

// ModelInspectHuman prints the architecture, then the problems.
type ModelInspectHuman struct{ view *View }

func (m ModelInspectHuman) Inspect(info *model.Info, _ bool) error {
	writeInspect(m.view.Out, info)
	return nil
}

// ModelVerify is roofline model verify's view.
type ModelVerify interface {
	Verify(dir string, res *model.VerifyResult)
}

// NewModelVerify returns the model verify view of type vt.
func NewModelVerify(vt ViewType, v *View) ModelVerify {
	if vt == ViewJSON {
		return ModelVerifyJSON{v}
	}
	return ModelVerifyHuman{v}
}

// ModelVerifyJSON prints the result with an "ok" field.
type ModelVerifyJSON struct{ view *View }

func (m ModelVerifyJSON) Verify(_ string, res *model.VerifyResult) {
	_ = writeEscaped(m.view.Out, ModelVerifyDocumentOf(res))
}

// ModelVerifyHuman prints one line per bad file and the verdict.
type ModelVerifyHuman struct{ view *View }

func (m ModelVerifyHuman) Verify(dir string, res *model.VerifyResult) {
	writeVerify(m.view.Out, dir, res)
}

// ModelManifestWritten says where model manifest wrote how many checksums
// and how to check them.
func (v *View) ModelManifestWritten(n int, path, dir string) {
	fmt.Fprintf(v.Out, "Wrote %d checksums to %s\nCheck the folder after a transfer with: roofline model verify %s -checksums %s\n",
		n, path, dir, path)
}

// ModelSynthWritten says what model synth wrote.
func (v *View) ModelSynthWritten(name, repo, dir string, info *model.Info) {
	fmt.Fprintf(v.Out, "Wrote a synthetic %s (%s) to %s: %s of sparse weights in %d shard(s).\nIt stands in for rehearsals and tests; it cannot generate text.\n",
		name, repo, dir, gib(info.WeightsBytes()), len(info.Shards))
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

// ProgressBar draws hashing progress on a terminal, at most ten times a second.
type ProgressBar struct {
	w     io.Writer
	label string
	start time.Time
	last  time.Time
	drawn bool
}

// Progress returns a progress bar on stderr when it is a terminal (nil
// otherwise: a nil bar's Finish does nothing) and the callback to feed it.
func (v *View) Progress(label string, terminal bool) (*ProgressBar, model.Progress) {
	if !terminal {
		return nil, nil
	}
	p := &ProgressBar{w: v.Err, label: label, start: time.Now()}
	return p, p.update
}

func (p *ProgressBar) update(done, total int64) {
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

// Finish ends the bar's line.
func (p *ProgressBar) Finish() {
	if p != nil && p.drawn {
		fmt.Fprintln(p.w)
	}
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
