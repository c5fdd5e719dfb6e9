// Regenerates crates/core/src/duration/testdata/{go_parse,go_format}.txt from the Go
// toolchain's `time` package, the reference ferrocrane's Go-duration parser is tested against:
//
//	cd hack/tools && go run ./testdata/duration ../../crates/core/src/duration/testdata
//
// Inputs are drawn from a fixed seed so the files only change when Go does.
// Each line is `hex(input) <TAB> result`; hex keeps tabs, quotes and non-ASCII
// bytes unambiguous. A parse result is `ok <nanoseconds>` or `err <message>`.
package main

import (
	"encoding/hex"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"time"
)

var units = []string{"ns", "us", "µs", "μs", "ms", "s", "m", "h"}

// Pieces that are nearly valid, so the error paths are reached as often as the good one.
var noise = []string{".", "-", "+", " ", "x", "d", "µ", "ss", "mh", "e", "\"", "\\", "\t", "日", "\u00a0"}

func digits(r *rand.Rand) string {
	switch r.Intn(6) {
	case 0:
		return ""
	case 1:
		return "0"
	case 2:
		// Near the 2^63 boundary of the leading integer.
		return fmt.Sprint(uint64(math.MaxInt64) - uint64(r.Intn(3)) + uint64(r.Intn(3)))
	default:
		n := 1 + r.Intn(12)
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteByte(byte('0' + r.Intn(10)))
		}
		return b.String()
	}
}

func component(r *rand.Rand) string {
	s := digits(r)
	if r.Intn(3) == 0 {
		s += "." + digits(r)
	}
	if r.Intn(12) != 0 {
		s += units[r.Intn(len(units))]
	}
	// Mostly well formed: a valid input reaches the arithmetic, an invalid one stops early.
	if r.Intn(4) == 0 {
		s += noise[r.Intn(len(noise))]
	}
	return s
}

func input(r *rand.Rand) string {
	var b strings.Builder
	switch r.Intn(5) {
	case 0:
		b.WriteByte('-')
	case 1:
		b.WriteByte('+')
	}
	n := 1 + r.Intn(4)
	for i := 0; i < n; i++ {
		b.WriteString(component(r))
	}
	return b.String()
}

// outDir is the first argument, or the working directory.
func outDir() string {
	if len(os.Args) > 1 {
		return os.Args[1]
	}
	return "."
}

func main() {
	r := rand.New(rand.NewSource(14))
	inputs := []string{
		"", "0", "-0", "+0", "00", "0s", "-", "+", ".", ".s", "-.s", "1", "1.", "1.s", ".5s", "5.s",
		"1h2m3s4ms5us6ns", "1.5h", "-1.5h", "+2s", "2562047h47m16.854775807s",
		"2562047h47m16.854775808s", "-2562047h47m16.854775808s", "-2562047h47m16.854775809s",
		"9223372036854775807ns", "9223372036854775808ns", "-9223372036854775808ns",
		"9223372036854775809ns", "0.000000001s", "0.0000000009s", "1.0000000000000000000000001h",
		"0.1h", "0.3h", "0.7s0.3s", "1µs", "1μs", "1us", "1µ", "1d", "1w", "1y", "1 s", " 1s", "1s ",
	}
	var parse strings.Builder
	for i := 0; i < 3000; i++ {
		if i >= len(inputs) {
			inputs = append(inputs, input(r))
		}
		s := inputs[i]
		d, err := time.ParseDuration(s)
		result := fmt.Sprintf("ok %d", int64(d))
		if err != nil {
			result = "err " + err.Error()
		}
		fmt.Fprintf(&parse, "%s\t%s\n", hex.EncodeToString([]byte(s)), result)
	}

	values := []int64{0, 1, -1, 999, 1000, 1001, 999999, 1000000, 1500000, 999999999, 1000000000,
		59999999999, 60000000000, 3599999999999, 3600000000000, math.MaxInt64, math.MinInt64, math.MinInt64 + 1}
	var format strings.Builder
	for i := 0; i < 1000; i++ {
		if i >= len(values) {
			// Every magnitude, not only the huge ones a uniform draw would give.
			v := r.Int63() >> uint(r.Intn(63))
			if r.Intn(2) == 0 {
				v = -v
			}
			values = append(values, v)
		}
		v := values[i]
		fmt.Fprintf(&format, "%d\t%s\n", v, time.Duration(v).String())
	}

	for name, body := range map[string]string{"go_parse.txt": parse.String(), "go_format.txt": format.String()} {
		if err := os.WriteFile(filepath.Join(outDir(), name), []byte(body), 0o644); err != nil {
			panic(err)
		}
	}
}
