// The Go clients of the zoo: hashicorp/go-retryablehttp (Debian's golang-github-hashicorp-go-
// retryablehttp-dev), chosen by the first argument:
//
//   - defaults: retryablehttp.NewClient() as its README shows it: four retries of any method on
//     429 and 5xx, waits of 1, 2, 4 ... s, Retry-After read on a 429 or 503 in delay-seconds.
//   - http-date: the same, with a Backoff (the library's documented hook) that also reads
//     Retry-After as an HTTP-date before it falls back to the default.
//
// Around it, the PETSTORE_* contract of `petstore-conformance client`: the operation performed
// PETSTORE_REPEAT times, each result printed, exit 1 when the client gave up.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	retryablehttp "github.com/hashicorp/go-retryablehttp"
)

// retryAfterOrDefault honours Retry-After in both forms of RFC 9110 section 10.2.3.
func retryAfterOrDefault(min, max time.Duration, attempt int, resp *http.Response) time.Duration {
	if resp != nil && (resp.StatusCode == 429 || resp.StatusCode == 503) {
		if when, err := http.ParseTime(resp.Header.Get("Retry-After")); err == nil {
			if wait := time.Until(when); wait > 0 {
				return wait
			}
			return 0
		}
	}
	return retryablehttp.DefaultBackoff(min, max, attempt, resp)
}

func request() (*retryablehttp.Request, error) {
	url := os.Getenv("PETSTORE_BASE_URL") + "/categories"
	var req *retryablehttp.Request
	var err error
	if os.Getenv("PETSTORE_OPERATION") == "createCategory" {
		body, _ := json.Marshal(map[string]string{"name": os.Getenv("PETSTORE_CATEGORY_NAME")})
		req, err = retryablehttp.NewRequest("POST", url, bytes.NewReader(body))
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
		}
	} else {
		req, err = retryablehttp.NewRequest("GET", url, nil)
	}
	if err == nil {
		req.Header.Set("Authorization", "Bearer "+os.Getenv("PETSTORE_API_KEY"))
	}
	return req, err
}

func main() {
	client := retryablehttp.NewClient()
	if len(os.Args) > 1 && os.Args[1] == "http-date" {
		client.Backoff = retryAfterOrDefault
	}
	repeat, err := strconv.Atoi(os.Getenv("PETSTORE_REPEAT"))
	if err != nil {
		repeat = 1
	}
	for i := 0; i < repeat; i++ {
		req, err := request()
		if err != nil {
			fmt.Fprintln(os.Stderr, "cannot build the request:", err)
			os.Exit(1)
		}
		resp, err := client.Do(req)
		if err != nil { // it gave up: retries spent, or a network failure
			fmt.Fprintln(os.Stderr, "gave up:", err)
			os.Exit(1)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if resp.StatusCode >= 400 {
			fmt.Fprintf(os.Stderr, "gave up: %d %.200s\n", resp.StatusCode, body)
			os.Exit(1)
		}
		fmt.Println(resp.StatusCode, string(body))
	}
}
