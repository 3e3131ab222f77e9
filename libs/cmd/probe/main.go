// Command probe GETs each URL it is given and exits 0 when every one
// answers 2xx, 1 otherwise (saying which and why on stderr). The images are
// distroless (no shell, no curl): compose.yaml's healthchecks and the Helm
// chart's test hook run this binary, which every image carries as /probe.
//
//	probe [-timeout 5s] URL...
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

func main() {
	timeout := flag.Duration("timeout", 5*time.Second, "time allowed for each URL")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: probe [-timeout 5s] URL...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	failed := false
	for _, u := range flag.Args() {
		if err := get(u, *timeout); err != nil {
			fmt.Fprintf(os.Stderr, "probe: %s: %v\n", u, err)
			failed = true
			continue
		}
		fmt.Printf("probe: %s: ok\n", u)
	}
	if failed {
		os.Exit(1)
	}
}

func get(url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<20))
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return fmt.Errorf("status %d", res.StatusCode)
	}
	return nil
}
