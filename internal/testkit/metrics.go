package testkit

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// Scrape gets path from h, a Prometheus metrics handler, and returns every
// sample by its series ("name{label="v",...}", labels in the order the
// exposition writes them). It fails the test on a status other than 200
// or a sample line it cannot read.
func Scrape(t testing.TB, h http.Handler, path string) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scraping %s: status %d: %s", path, rec.Code, rec.Body)
	}
	samples := map[string]float64{}
	sc := bufio.NewScanner(rec.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("scraping %s: bad sample line %q: %v", path, line, err)
		}
		samples[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("scraping %s: %v", path, err)
	}
	return samples
}
