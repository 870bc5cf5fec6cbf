package rehearsal

import "strings"

// Tokenizer is the rehearsal engine's deterministic toy tokenizer. It needs no
// vocabulary file, so that every model folder works and a prompt's token count
// is the same for /tokenize, usage.prompt_tokens and the max_model_len check.
//
// Token ids, for a vocabulary of size V (the model's vocab_size, at least 1024):
//
//	0..255          one byte each (byte fallback: any text can be encoded)
//	256..V-9        a "word": a space followed by lowercase ASCII letters, the
//	                letters being the bijective base-26 numeral of id-256
//	                (" a" = 256, " z" = 281, " aa" = 282, ...)
//	V-8..V-1        special tokens (Specials), matched literally
//
// Encoding scans left to right: a special token literal becomes its id; a space
// followed by lowercase letters becomes the longest word token whose id is
// below V-8 (remaining letters are then encoded one byte each); anything else
// is one byte. Decoding concatenates the pieces, so decode(encode(s)) == s.
type Tokenizer struct {
	vocab   int
	maxWord int // id of the last word token, exclusive
}

// Specials are the special tokens, at ids V-len(Specials)..V-1 in this order.
var Specials = []string{
	"<|endoftext|>", "<|im_start|>", "<|im_end|>",
	"<think>", "</think>", "<tool_call>", "</tool_call>", "<|eot_id|>",
}

const minVocab = 1024

// NewTokenizer returns the toy tokenizer for a vocabulary of vocab ids
// (raised to 1024 when smaller, so that every word of up to two letters exists).
func NewTokenizer(vocab int) *Tokenizer {
	if vocab < minVocab {
		vocab = minVocab
	}
	return &Tokenizer{vocab: vocab, maxWord: vocab - len(Specials)}
}

// VocabSize is the number of token ids.
func (t *Tokenizer) VocabSize() int { return t.vocab }

// SpecialID returns the id of a special token literal.
func (t *Tokenizer) SpecialID(s string) (int, bool) {
	for i, sp := range Specials {
		if sp == s {
			return t.maxWord + i, true
		}
	}
	return 0, false
}

// Encode turns text into token ids.
func (t *Tokenizer) Encode(text string) []int {
	ids := make([]int, 0, len(text)/3+1)
	for i := 0; i < len(text); {
		if text[i] == '<' {
			if id, n := t.special(text[i:]); n > 0 {
				ids = append(ids, id)
				i += n
				continue
			}
		}
		if text[i] == ' ' && i+1 < len(text) && isLower(text[i+1]) {
			j := i + 1
			for j < len(text) && isLower(text[j]) {
				j++
			}
			// Longest prefix whose id fits in the vocabulary.
			end := j
			for ; end > i+1; end-- {
				if id, ok := t.wordID(text[i+1 : end]); ok {
					ids = append(ids, id)
					break
				}
			}
			if end > i+1 {
				i = end
				continue
			}
		}
		ids = append(ids, int(text[i]))
		i++
	}
	return ids
}

// Count is len(Encode(text)) without building the slice.
func (t *Tokenizer) Count(text string) int { return len(t.Encode(text)) }

func (t *Tokenizer) special(s string) (int, int) {
	for i, sp := range Specials {
		if strings.HasPrefix(s, sp) {
			return t.maxWord + i, len(sp)
		}
	}
	return 0, 0
}

// wordID is the id of the word token " "+letters, if it exists.
func (t *Tokenizer) wordID(letters string) (int, bool) {
	n := 0
	for i := 0; i < len(letters); i++ {
		n = n*26 + int(letters[i]-'a') + 1
		if n+255 >= t.maxWord {
			return 0, false
		}
	}
	return n + 255, true
}

// Piece returns the text of one token id ("" for an id outside the vocabulary).
func (t *Tokenizer) Piece(id int) string {
	switch {
	case id < 0 || id >= t.vocab:
		return ""
	case id < 256:
		return string([]byte{byte(id)})
	case id >= t.maxWord:
		return Specials[id-t.maxWord]
	}
	n := id - 255 // bijective base-26: 1 = "a"
	var buf [16]byte
	i := len(buf)
	for n > 0 {
		n--
		i--
		buf[i] = byte('a' + n%26)
		n /= 26
	}
	i--
	buf[i] = ' '
	return string(buf[i:])
}

// Decode turns ids back into text. Ids outside the vocabulary are skipped, and
// byte sequences that are not valid UTF-8 are kept as they are (the HTTP layer
// JSON-encodes them with replacement characters, as a real detokenizer does).
func (t *Tokenizer) Decode(ids []int) string {
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(t.Piece(id))
	}
	return b.String()
}

func isLower(c byte) bool { return c >= 'a' && c <= 'z' }
