package gate
import ("context";"testing";"time";"sort";"net/http";"net/http/httptest";"sync";"net";"github.com/roofline/roofline/internal/gate/gatetest")
var tmpMu sync.Mutex
var tmpEntry = map[string]time.Time{}
var tmpSent = map[string]time.Time{}
func TestTmpDecompose(t *testing.T){
 fake := gatetest.New(gatetest.Options{TTFT: 50*time.Millisecond, ITL: 10*time.Millisecond})
 ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request){
   now := time.Now()
   tmpMu.Lock(); tmpEntry[r.Header.Get("X-Request-Id")] = now; tmpMu.Unlock()
   fake.ServeHTTP(w, r)
 }))
 var conns int
 ts.Config.ConnState = func(c net.Conn, s http.ConnState) { if s == http.StateNew { tmpMu.Lock(); conns++; tmpMu.Unlock() } }
 ts.Start()
 defer func() { t.Log("connections", conns) }()
 defer ts.Close()
 target := Target{BaseURL: ts.URL, Model: "test-model", Engine: "vllm"}
 tmpHook = func(id string, sent time.Time) { tmpMu.Lock(); tmpSent[id] = sent; tmpMu.Unlock() }
 res, err := Bench(context.Background(), nil, target, BenchSpec{Concurrency: 64, Requests: 192, InputTokens: 64, OutputTokens: 24, Warmup: 64}, nil)
 if err != nil { t.Fatal(err) }
 var d []float64
 for id, s := range tmpSent { if e, ok := tmpEntry[id]; ok { d = append(d, float64(e.Sub(s).Microseconds())/1000) } }
 sort.Float64s(d)
 n := len(d)
 t.Logf("TTFT median %.3f; sent->handler entry: n %d p10 %.3f median %.3f p90 %.3f max %.3f", res.TTFT.Median, n, d[n/10], d[n/2], d[9*n/10], d[n-1])
}
