// Command loadgen sends GET requests from N concurrent clients, each on its own keep-alive
// HTTP/1.1 connection, for a fixed duration (closed loop: a client sends its next request when
// the previous answer has been read), and prints one JSON object with the latency percentiles,
// the throughput and the status codes.
//
//	loadgen -urls FILE -c 32 -duration 20s [-warmup 2s] [-cert C -key K] [-cacert CA] [-H 'Name: value']...
//
// FILE holds one URL per line; client i starts at line i and walks the list in order, so every
// URL is requested about equally often. Requests answered during -warmup are not counted.
// It only talks to the URLs it is given (the benchmark gives it loopback ones) and stops by
// itself after -warmup + -duration, or at -max requests.
package main

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

type headers []string

func (h *headers) String() string     { return strings.Join(*h, ", ") }
func (h *headers) Set(v string) error { *h = append(*h, v); return nil }

type sample struct {
	latency time.Duration
	status  int
	bytes   int64
}

type result struct {
	Requests     int            `json:"requests"`
	Errors       int            `json:"errors"`
	Statuses     map[string]int `json:"statuses"`
	DurationS    float64        `json:"duration_s"`
	ThroughputRS float64        `json:"throughput_rps"`
	MeanMS       float64        `json:"mean_ms"`
	P50MS        float64        `json:"p50_ms"`
	P90MS        float64        `json:"p90_ms"`
	P99MS        float64        `json:"p99_ms"`
	MaxMS        float64        `json:"max_ms"`
	MedianBytes  int64          `json:"median_bytes"`
	FirstError   string         `json:"first_error,omitempty"`
}

func main() {
	urlsFile := flag.String("urls", "", "file with one URL per line")
	clients := flag.Int("c", 32, "concurrent clients (one connection each)")
	duration := flag.Duration("duration", 20*time.Second, "how long to measure")
	warmup := flag.Duration("warmup", 2*time.Second, "requests before this are sent but not counted")
	maxRequests := flag.Int64("max", 10_000_000, "stop after this many requests in all")
	cert := flag.String("cert", "", "client certificate (PEM)")
	key := flag.String("key", "", "client key (PEM)")
	cacert := flag.String("cacert", "", "CA that signed the server's certificate (PEM)")
	timeout := flag.Duration("timeout", 30*time.Second, "per-request timeout")
	var hdrs headers
	flag.Var(&hdrs, "H", "request header 'Name: value' (repeatable)")
	flag.Parse()

	urls, err := readLines(*urlsFile)
	if err != nil || len(urls) == 0 {
		fail("-urls %q: %v (need at least one URL)", *urlsFile, err)
	}
	tlsConfig := &tls.Config{}
	if *cert != "" {
		pair, err := tls.LoadX509KeyPair(*cert, *key)
		if err != nil {
			fail("-cert/-key: %v", err)
		}
		tlsConfig.Certificates = []tls.Certificate{pair}
	}
	if *cacert != "" {
		pem, err := os.ReadFile(*cacert)
		if err != nil {
			fail("-cacert: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			fail("-cacert %s: no certificate in it", *cacert)
		}
		tlsConfig.RootCAs = pool
	}
	parsed := make(http.Header)
	for _, h := range hdrs {
		name, value, ok := strings.Cut(h, ":")
		if !ok {
			fail("-H %q: want 'Name: value'", h)
		}
		parsed.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	}

	start := time.Now()
	measureFrom := start.Add(*warmup)
	stop := measureFrom.Add(*duration)
	var sent atomic.Int64
	var mu sync.Mutex
	var samples []sample
	var firstErr string
	var wg sync.WaitGroup
	for i := 0; i < *clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			// One transport per client: its own connection, HTTP/1.1 (an empty TLSNextProto map
			// turns HTTP/2 off), so "32 clients" means 32 connections to both servers alike.
			tr := &http.Transport{
				TLSClientConfig:     tlsConfig.Clone(),
				MaxIdleConnsPerHost: 1,
				TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{},
				DisableCompression:  true,
			}
			client := &http.Client{Transport: tr, Timeout: *timeout}
			var local []sample
			for j := i; time.Now().Before(stop) && sent.Add(1) <= *maxRequests; j++ {
				req, err := http.NewRequest(http.MethodGet, urls[j%len(urls)], nil)
				if err != nil {
					fail("%v", err)
				}
				req.Header = parsed.Clone()
				t0 := time.Now()
				resp, err := client.Do(req)
				s := sample{status: 0}
				if err == nil {
					s.bytes, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					s.status = resp.StatusCode
				}
				t1 := time.Now()
				s.latency = t1.Sub(t0)
				if err != nil || s.status/100 != 2 {
					mu.Lock()
					if firstErr == "" {
						if err != nil {
							firstErr = err.Error()
						} else {
							firstErr = fmt.Sprintf("HTTP %d from %s", s.status, req.URL)
						}
					}
					mu.Unlock()
				}
				if t0.After(measureFrom) {
					local = append(local, s)
				}
			}
			tr.CloseIdleConnections()
			mu.Lock()
			samples = append(samples, local...)
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	end := time.Now()
	if end.After(stop) {
		end = stop
	}
	out := summarize(samples, end.Sub(measureFrom))
	out.FirstError = firstErr
	enc := json.NewEncoder(os.Stdout)
	if err := enc.Encode(out); err != nil {
		fail("%v", err)
	}
}

func summarize(samples []sample, window time.Duration) result {
	r := result{Statuses: map[string]int{}, DurationS: window.Seconds()}
	var lat []float64
	var sizes []int64
	var sum float64
	for _, s := range samples {
		r.Requests++
		r.Statuses[fmt.Sprint(s.status)]++
		if s.status/100 != 2 {
			r.Errors++
		}
		ms := float64(s.latency) / float64(time.Millisecond)
		lat = append(lat, ms)
		sizes = append(sizes, s.bytes)
		sum += ms
	}
	if len(lat) == 0 {
		return r
	}
	sort.Float64s(lat)
	sort.Slice(sizes, func(a, b int) bool { return sizes[a] < sizes[b] })
	r.ThroughputRS = float64(len(lat)) / window.Seconds()
	r.MeanMS = sum / float64(len(lat))
	r.P50MS = rank(lat, 50)
	r.P90MS = rank(lat, 90)
	r.P99MS = rank(lat, 99)
	r.MaxMS = lat[len(lat)-1]
	r.MedianBytes = sizes[len(sizes)/2]
	return r
}

// rank is the nearest-rank percentile of sorted values.
func rank(sorted []float64, p int) float64 {
	k := (p*len(sorted) + 99) / 100
	if k < 1 {
		k = 1
	}
	return sorted[k-1]
}

func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	return lines, sc.Err()
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "loadgen: "+format+"\n", args...)
	os.Exit(2)
}
