package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
)

// promptSource makes one prompt per request index. With the server's
// /tokenize it sends token ids to /v1/completions, which makes input lengths
// exact with no tokenizer in roofline (vLLM's timed_trace trick); ids come
// from tokenizing seeded text, so no special token is ever sent. Each prompt
// starts at a different offset of the pool, so requests share no prefix and
// prefix caching cannot flatter the figures.
type promptSource struct {
	ids   []int    // token pool; nil without /tokenize
	words []string // word pool for text prompts
	ratio float64  // tokens per word, measured when possible
	seed  uint64
	exact bool
}

// wordList is varied, common English, so tokenizers split it into ordinary
// tokens.
var wordList = strings.Fields(`time person year way day thing man world life hand part child eye woman place
work week case point government company number group problem fact be have do say get make go know take see
come think look want give use find tell ask seem feel try leave call good new first last long great little own
other old right big high different small large next early young important few public bad same able to of in
for on with at by from up about into over after beneath under above the and a that I it not he as you this but
his they her she or an will my one all would there their what so out if who which go me when can like no just
him people your some could them than then now only its also back two how our well even want because any these
most us river mountain garden window music paper silver window quiet orange engine harbor market winter summer
bridge candle forest letter morning signal planet rocket story travel valley yellow zebra anchor basket cotton
desert feather guitar island jungle kettle lantern meadow needle ocean pencil question rabbit saddle ticket`)

// newPromptSource prepares prompts for spec against t.
func newPromptSource(ctx context.Context, c *http.Client, t Target, spec *BenchSpec) *promptSource {
	p := &promptSource{seed: uint64(spec.Seed), ratio: 1}
	r := rand.New(rand.NewPCG(p.seed, 0x9e3779b97f4a7c15))
	n := max(spec.InputTokens, 512) + 512
	p.words = make([]string, n)
	for i := range p.words {
		p.words[i] = wordList[r.IntN(len(wordList))]
	}
	ids, err := tokenize(ctx, c, t, strings.Join(p.words, " "))
	if err == nil && len(ids) >= 64 {
		p.ratio = float64(len(ids)) / float64(len(p.words))
		if spec.Endpoint == EndpointCompletions {
			p.ids, p.exact = ids, true
		}
	}
	return p
}

// tokenize calls the server's /tokenize (vLLM and SGLang both have it).
func tokenize(ctx context.Context, c *http.Client, t Target, text string) ([]int, error) {
	resp, err := postJSON(ctx, c, t, "/tokenize", map[string]any{"model": t.Model, "prompt": text, "add_special_tokens": false})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out struct {
		Tokens []int `json:"tokens"`
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("/tokenize: %w", err)
	}
	return out.Tokens, nil
}

// offset picks request i's starting point in a pool of n (splitmix64, so
// any goroutine can compute it).
func (p *promptSource) offset(i, n int) int {
	z := p.seed + uint64(i+1)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return int(z % uint64(n))
}

// tokens returns request i's prompt of n token ids.
func (p *promptSource) tokens(i, n int) []int {
	out := make([]int, n)
	off := p.offset(i, len(p.ids))
	for k := range out {
		out[k] = p.ids[(off+k)%len(p.ids)]
	}
	return out
}

// text returns request i's prompt of about n tokens.
func (p *promptSource) text(i, n int) string {
	words := max(int(float64(n)/p.ratio+0.5), 1)
	off := p.offset(i, len(p.words))
	var b strings.Builder
	for k := range words {
		if k > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(p.words[(off+k)%len(p.words)])
	}
	return b.String()
}
