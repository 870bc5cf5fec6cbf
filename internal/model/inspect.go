package model

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/roofline/roofline/internal/fsx"
)

// Files the air-gapped seed requires beside the weights.
var requiredFiles = []string{"config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json"}

// IndexFile is the shard index of a sharded safetensors model.
const IndexFile = "model.safetensors.index.json"

// pickleExts are weight formats that run code when loaded.
var pickleExts = []string{".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle"}

// Inspect reads a model folder without reading its weights: config.json,
// the header of every top-level .safetensors file and the shard index, and it
// runs the completeness and air-gap checks, whose findings are in
// Info.Problems. The error is only for a folder that cannot be read at all.
func Inspect(dir string) (*Info, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("model folder %s: %w", dir, unwrapPath(err))
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("model folder %s is a file, not a folder: give the folder that holds config.json and the .safetensors files", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("model folder %s: %w", dir, unwrapPath(err))
	}
	info := &Info{Dir: dir}
	present := map[string]bool{}
	var shardFiles []string
	for _, e := range entries {
		name := e.Name()
		present[name] = true
		if e.IsDir() || !e.Type().IsRegular() && e.Type()&fs.ModeSymlink == 0 {
			continue
		}
		switch ext := strings.ToLower(filepath.Ext(name)); {
		case ext == ".safetensors":
			shardFiles = append(shardFiles, name)
		case slices.Contains(pickleExts, ext):
			info.add(SeverityError, name, "pickle weights are refused: convert to safetensors",
				"pickle files (.bin, .pt, .pth) run code when loaded; the air-gapped setup takes safetensors only. Convert with a safetensors conversion script on a connected machine, or download the model's safetensors revision, then delete "+name+".")
		}
	}
	info.walk(dir)

	for _, f := range requiredFiles {
		if !present[f] {
			info.add(SeverityError, f, "required file "+f+" is missing",
				"engines read it at start; copy it from the model's original folder (the transfer was incomplete), then run roofline model verify")
		}
	}
	if present["config.json"] {
		info.readConfig(dir)
	}
	if present["tokenizer_config.json"] {
		info.checkChatTemplate(dir, present)
	}

	slices.Sort(shardFiles)
	// The index and the headers are read at the same time: on a 163-shard
	// model both take milliseconds.
	var idx *index
	var idxProb *Problem
	idxDone := make(chan struct{})
	go func() {
		defer close(idxDone)
		if present[IndexFile] {
			idx, idxProb = readIndex(dir)
		}
	}()
	results := readShards(dir, shardFiles, info.sizes)
	<-idxDone
	if idxProb != nil {
		info.Problems = append(info.Problems, *idxProb)
	}
	if idx != nil {
		info.IndexTotalSize = idx.total
	}
	if len(shardFiles) == 0 && (idx == nil || len(idx.files) == 0) {
		info.add(SeverityError, "", "no safetensors weights in the folder",
			"roofline takes weights as .safetensors files only (model.safetensors or model-0000N-of-0000M.safetensors beside config.json)")
	}
	if idx != nil {
		// Engines load only the shards the index names; others are leftovers.
		kept := results[:0]
		for _, r := range results {
			if idx.files[r.file] != nil {
				kept = append(kept, r)
			} else {
				info.add(SeverityWarning, r.file, r.file+" is not listed in "+IndexFile,
					"engines load only the shards the index names; delete the file if it is a leftover of another revision")
			}
		}
		results = kept
		var missing []string
		for f := range idx.files {
			if !present[f] {
				missing = append(missing, f)
			}
		}
		slices.Sort(missing)
		for _, f := range missing {
			info.add(SeverityError, f, "shard "+f+" is listed in "+IndexFile+" but missing",
				"copy the missing shard from the model's original folder, then run roofline model verify")
		}
	}
	// With an index whose fingerprints match the headers no tensor can be in
	// two shards, and the 92,000-name duplicate check is skipped.
	indexOK := idx != nil && info.crossCheckIndex(idx, results)
	info.assemble(results, !indexOK)
	if indexOK {
		info.checkTotalSize(idx)
	}
	if info.Config != nil && !hasLMHead(info.Tensors) && len(info.Tensors) > 0 {
		if _, set := info.Config.Raw["tie_word_embeddings"]; !set {
			info.Config.TieWordEmbeddings = true // no lm_head in the weights: the engine ties it to the embedding
		}
	}
	return info, nil
}

func hasLMHead(ts []Tensor) bool {
	for _, t := range ts {
		if isLMHead(t.Name) {
			return true
		}
	}
	return false
}

// Size caps of the JSON files read whole. A model folder comes from
// elsewhere: a config.json linked to /dev/zero must not be read forever.
// Real ones: config.json a few KiB, tokenizer_config.json up to a few MiB
// (chat templates, added tokens), DeepSeek-V3's index 9 MB.
const (
	maxConfigBytes          = 4 << 20
	MaxTokenizerConfigBytes = 64 << 20
	maxIndexBytes           = 256 << 20
)

func unwrapPath(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}

func (i *Info) add(sev, file, summary, detail string) {
	i.Problems = append(i.Problems, Problem{Severity: sev, File: file, Summary: summary, Detail: detail})
}

// HasErrors reports whether any problem is an error.
func (i *Info) HasErrors() bool {
	for _, p := range i.Problems {
		if p.Severity == SeverityError {
			return true
		}
	}
	return false
}

// ErrorSummaries returns the one-line summaries of the problems that are
// errors, in order (nil when there are none).
func (i *Info) ErrorSummaries() []string {
	var out []string
	for _, p := range i.Problems {
		if p.Severity == SeverityError {
			out = append(out, p.Summary)
		}
	}
	return out
}

// walk sums the sizes of the regular files under dir and warns about pickle
// files below the top level (such as Llama's original/consolidated.00.pth):
// engines do not load them, but they have no place on an air-gapped server.
func (i *Info) walk(dir string) {
	top := filepath.Clean(dir)
	i.sizes = map[string]int64{}
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			i.add(SeverityWarning, rel(dir, path), "cannot read "+rel(dir, path), unwrapPath(err).Error())
			return nil
		}
		var fi fs.FileInfo
		switch {
		case d.Type().IsRegular():
			fi, err = d.Info()
		case d.Type()&fs.ModeSymlink != 0:
			// Hugging Face cache snapshots are symlinks into blobs/.
			fi, err = os.Stat(path)
		default:
			return nil
		}
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		i.TotalBytes += fi.Size()
		if filepath.Dir(path) == top {
			i.sizes[d.Name()] = fi.Size()
		}
		if filepath.Dir(path) != top && slices.Contains(pickleExts, strings.ToLower(filepath.Ext(path))) {
			r := rel(dir, path)
			i.add(SeverityWarning, r, "pickle file "+r+" in a subfolder",
				"engines do not load it, but pickle files run code when loaded; delete it or keep it off the server")
		}
		return nil
	})
}

func rel(dir, path string) string {
	if r, err := filepath.Rel(dir, path); err == nil {
		return filepath.ToSlash(r)
	}
	return path
}

func (i *Info) readConfig(dir string) {
	data, err := fsx.ReadFile(filepath.Join(dir, "config.json"), maxConfigBytes)
	if err != nil {
		i.add(SeverityError, "config.json", "cannot read config.json", unwrapPath(err).Error())
		return
	}
	c, warns, err := ParseConfig(data)
	if err != nil {
		i.add(SeverityError, "config.json", "config.json is not valid", err.Error()+"; copy it again from the model's original folder")
		return
	}
	for _, w := range warns {
		i.add(SeverityWarning, "config.json", w, "")
	}
	i.Config = c
	if c.NumHiddenLayers == 0 || c.HiddenSize == 0 || c.NumAttentionHeads == 0 {
		i.add(SeverityWarning, "config.json", "config.json lacks num_hidden_layers, hidden_size or num_attention_heads",
			"roofline cannot size the KV cache without them; is this a language model's config?")
	}
}

// checkChatTemplate warns when no chat template is found: the server starts,
// but chat requests and tool calls need one.
func (i *Info) checkChatTemplate(dir string, present map[string]bool) {
	if present["chat_template.jinja"] || present["chat_template.json"] {
		return
	}
	data, err := fsx.ReadFile(filepath.Join(dir, "tokenizer_config.json"), MaxTokenizerConfigBytes)
	if err != nil {
		i.add(SeverityError, "tokenizer_config.json", "cannot read tokenizer_config.json", unwrapPath(err).Error())
		return
	}
	var tc map[string]json.RawMessage
	if err := json.Unmarshal(data, &tc); err != nil {
		i.add(SeverityError, "tokenizer_config.json", "tokenizer_config.json is not a valid JSON object", err.Error())
		return
	}
	if t, ok := tc["chat_template"]; ok && string(t) != "null" && string(t) != `""` {
		return
	}
	i.add(SeverityWarning, "tokenizer_config.json", "no chat template",
		"neither tokenizer_config.json's chat_template nor chat_template.jinja exists: /v1/chat/completions and tool calling need one; copy it from the model's original revision or pass --chat-template")
}

// readIndex reads the shard index.
func readIndex(dir string) (*index, *Problem) {
	data, err := fsx.ReadFile(filepath.Join(dir, IndexFile), maxIndexBytes)
	if err != nil {
		return nil, &Problem{SeverityError, IndexFile, "cannot read " + IndexFile, unwrapPath(err).Error()}
	}
	idx, err := parseIndex(data)
	if err != nil {
		return nil, &Problem{SeverityError, IndexFile, IndexFile + " is not valid", err.Error() + "; copy it again from the model's original folder"}
	}
	return idx, nil
}

// parseIndex reads model.safetensors.index.json with the header parser:
// DeepSeek-V3's is 9 MB with 92,000 entries, too slow for encoding/json.
func parseIndex(data []byte) (*index, error) {
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("it is not UTF-8 text")
	}
	p := newParser(data)
	idx := &index{data: data}
	err := p.object(func(key string) error {
		var err error
		switch key {
		case "weight_map":
			if idx.files != nil {
				return p.errorf("weight_map is given twice")
			}
			if idx.files, err = p.weightMap(); err != nil {
				return fmt.Errorf("weight_map: %w", err)
			}
		case "metadata":
			if idx.total, err = p.totalSize(); err != nil {
				return fmt.Errorf("metadata: %w", err)
			}
		default:
			err = p.skip(0)
		}
		return err
	})
	if err == nil {
		err = p.end()
	}
	if err != nil {
		return nil, err
	}
	if idx.files == nil {
		return nil, fmt.Errorf("it has no weight_map")
	}
	for f := range idx.files {
		if f == "" || strings.ContainsAny(f, `/\`) || f == "." || f == ".." {
			return nil, fmt.Errorf("weight_map names %q, which is not a file name in the folder", f)
		}
	}
	return idx, nil
}

// weightMap reads weight_map into per-shard name fingerprints.
func (p *parser) weightMap() (map[string]*nameSum, error) {
	m := map[string]*nameSum{}
	var last string
	var lastSum *nameSum
	err := p.object(func(k string) error {
		if p.peek() != '"' {
			return p.errorf("the value of %q is not a file name", k)
		}
		v, err := p.str()
		if err != nil {
			return err
		}
		if v != last || lastSum == nil { // consecutive entries mostly share a shard
			if lastSum = m[v]; lastSum == nil {
				lastSum = &nameSum{}
				m[v] = lastSum
			}
			last = v
		}
		lastSum.add(k)
		return nil
	})
	return m, err
}

// totalSize reads the metadata object and returns total_size (0 when absent
// or not a number; some writers store a float).
func (p *parser) totalSize() (int64, error) {
	if p.peek() != '{' {
		return 0, p.skip(0)
	}
	var total int64
	err := p.object(func(k string) error {
		start := p.pos
		if err := p.skip(0); err != nil {
			return err
		}
		var f float64
		if k == "total_size" && json.Unmarshal([]byte(p.buf[start:p.pos]), &f) == nil && f >= 0 && f < 1<<62 {
			total = int64(f)
		}
		return nil
	})
	return total, err
}

type shardResult struct {
	file    string
	shard   *Shard // nil when unreadable
	tensors []Tensor
	names   nameSum
	probs   []Problem
}

// readShards reads the headers in parallel: a 163-shard model is 163 small
// reads that are otherwise paid one after another.
func readShards(dir string, files []string, sizes map[string]int64) []shardResult {
	results := make([]shardResult, len(files))
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(runtime.GOMAXPROCS(0), len(files)); w++ {
		wg.Go(func() {
			scratch := make([]byte, 8+firstRead)
			for n := range work {
				results[n] = readShard(dir, files[n], sizes, scratch)
			}
		})
	}
	for n := range files {
		work <- n
	}
	close(work)
	wg.Wait()
	return results
}

// assemble collects the shards' tensors and problems in file order.
func (i *Info) assemble(results []shardResult, dedupe bool) {
	total := 0
	for _, r := range results {
		total += len(r.tensors)
	}
	i.Tensors = make([]Tensor, 0, total)
	var seen *nameSet
	if dedupe {
		seen = newNameSet(total)
	}
	for _, r := range results {
		i.Problems = append(i.Problems, r.probs...)
		if r.shard == nil {
			continue
		}
		i.Shards = append(i.Shards, *r.shard)
		for _, t := range r.tensors {
			if seen != nil && !seen.add(t.Name) {
				i.add(SeverityError, t.File, "tensor "+t.Name+" is in two shards (the second is "+t.File+")",
					"the folder mixes shards of two revisions or layouts; copy the model again")
				continue
			}
			i.Tensors = append(i.Tensors, t)
		}
	}
}

// readShard reads one shard's header; size comes from the folder walk (one
// fstat fewer per shard), else from the file.
func readShard(dir, name string, sizes map[string]int64, scratch []byte) shardResult {
	res := shardResult{file: name}
	f, _, err := fsx.OpenRegular(filepath.Join(dir, name))
	if err != nil {
		res.probs = append(res.probs, Problem{SeverityError, name, "cannot open " + name, unwrapPath(err).Error()})
		return res
	}
	defer f.Close()
	size, ok := sizes[name]
	if !ok {
		st, err := f.Stat()
		if err != nil {
			res.probs = append(res.probs, Problem{SeverityError, name, "cannot stat " + name, unwrapPath(err).Error()})
			return res
		}
		size = st.Size()
	}
	h, err := readHeader(f, size, name, scratch)
	if err != nil {
		res.probs = append(res.probs, Problem{SeverityError, name, name + " has an unreadable safetensors header",
			err.Error() + "; copy the file again and run roofline model verify"})
		return res
	}
	want := 8 + h.Len + h.DataBytes
	switch {
	case size < want:
		res.probs = append(res.probs, Problem{SeverityError, name,
			fmt.Sprintf("%s is truncated: %d bytes on disk, its header says %d", name, size, want),
			fmt.Sprintf("%d bytes are missing; the transfer was cut short: copy the file again and run roofline model verify", want-size)})
	case size > want:
		res.probs = append(res.probs, Problem{SeverityWarning, name,
			fmt.Sprintf("%s has %d bytes past the data its header describes", name, size-want),
			"engines ignore them; the file may have been appended to"})
	}
	res.shard = &Shard{File: name, Size: size, HeaderLen: h.Len, DataBytes: h.DataBytes, Tensors: len(h.Tensors), Metadata: h.Metadata}
	for k := range h.Tensors {
		h.Tensors[k].File = name
		res.names.add(h.Tensors[k].Name)
	}
	res.tensors = h.Tensors
	return res
}

// crossCheckIndex compares the index's weight_map with the headers, shard by
// shard, by name fingerprints; only when they differ are the names compared
// one by one to report the culprits.
func (i *Info) crossCheckIndex(idx *index, results []shardResult) bool {
	var bad []string
	for _, r := range results {
		if r.shard == nil {
			continue // unreadable: reported already
		}
		if want := idx.files[r.file]; want == nil || *want != r.names {
			bad = append(bad, r.file)
		}
	}
	if len(bad) > 0 {
		i.add(SeverityError, IndexFile, IndexFile+" does not match the shards' headers", indexCulprits(idx, results, bad))
		return false
	}
	return true
}

// checkTotalSize compares the index's total_size with the headers.
func (i *Info) checkTotalSize(idx *index) {
	if idx.total > 0 && len(i.Shards) == len(idx.files) {
		if w := i.WeightsBytes(); w != idx.total {
			i.add(SeverityWarning, IndexFile, fmt.Sprintf("%s says total_size %d, the headers add up to %d", IndexFile, idx.total, w),
				"roofline uses the headers")
		}
	}
}

// indexCulprits names the first tensors the index and the headers of the
// shards in bad disagree on.
func indexCulprits(idx *index, results []shardResult, bad []string) string {
	var raw struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	_ = json.Unmarshal(idx.data, &raw)
	badSet := map[string]bool{}
	for _, f := range bad {
		badSet[f] = true
	}
	inHeaders := map[string]string{}
	for _, r := range results {
		if badSet[r.file] {
			for _, t := range r.tensors {
				inHeaders[t.Name] = t.File
			}
		}
	}
	var notInShard, notInIndex []string
	for name, f := range raw.WeightMap {
		if badSet[f] && inHeaders[name] != f {
			notInShard = append(notInShard, name+" (index: "+f+")")
		}
	}
	for name, f := range inHeaders {
		if raw.WeightMap[name] != f {
			notInIndex = append(notInIndex, name+" (header of "+f+")")
		}
	}
	slices.Sort(notInShard)
	slices.Sort(notInIndex)
	var parts []string
	if len(notInShard) > 0 {
		parts = append(parts, fmt.Sprintf("%d tensors the index places in a shard are not in its header, first %s", len(notInShard), notInShard[0]))
	}
	if len(notInIndex) > 0 {
		parts = append(parts, fmt.Sprintf("%d tensors in the headers are not in the index there, first %s", len(notInIndex), notInIndex[0]))
	}
	return strings.Join(parts, "; ") + ". The folder mixes files of two revisions: copy the model again, then run roofline model verify"
}

type index struct {
	total int64
	// files fingerprints the tensor names the index places in each shard;
	// comparing them with the headers' costs no map of 92,000 names.
	files map[string]*nameSum
	data  []byte // kept to name the culprits when the fingerprints differ
}
