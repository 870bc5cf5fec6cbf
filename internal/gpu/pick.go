package gpu

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Pick chooses the GPUs of the snapshot that a TP x PP engine runs on: the
// ones list names (comma-separated indexes, the -gpus flag) when listed is
// set, else the first TP x PP by index. Each listed index is parsed and
// looked up before the next, so the first bad one is the one reported. A
// picked GPU that reports no memory cannot be sized for: an error.
func (s *Snapshot) Pick(list string, listed bool, tp, pp int) ([]*GPU, error) {
	picked, err := s.pick(list, listed, tp, pp)
	if err != nil {
		return nil, err
	}
	for _, d := range picked {
		if d.CUDATotalBytes() == 0 {
			return nil, fmt.Errorf("%s reports no memory for GPU %d", s.Source, d.Index)
		}
	}
	return picked, nil
}

func (s *Snapshot) pick(list string, listed bool, tp, pp int) ([]*GPU, error) {
	n := tp * pp
	var picked []*GPU
	if !listed {
		gs := append([]GPU(nil), s.GPUs...)
		sort.Slice(gs, func(i, j int) bool { return gs[i].Index < gs[j].Index })
		if len(gs) < n {
			return nil, fmt.Errorf("TP %d x PP %d needs %d GPUs, %s has %d", tp, pp, n, s.Source, len(gs))
		}
		for i := 0; i < n; i++ {
			picked = append(picked, &gs[i])
		}
		return picked, nil
	}
	seen := map[int]bool{}
	for _, f := range strings.Split(list, ",") {
		i, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("-gpus %q: give GPU indexes separated by commas, like 0,1", list)
		}
		d, ok := s.GPU(i)
		if !ok {
			return nil, fmt.Errorf("-gpus: there is no GPU %d in %s (it has %d GPUs)", i, s.Source, len(s.GPUs))
		}
		if seen[i] {
			return nil, fmt.Errorf("-gpus: GPU %d is listed twice", i)
		}
		seen[i] = true
		picked = append(picked, d)
	}
	if len(picked) != n {
		return nil, fmt.Errorf("-gpus lists %d GPUs but TP %d x PP %d needs %d", len(picked), tp, pp, n)
	}
	return picked, nil
}
