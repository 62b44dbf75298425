// dsse-verify PUBLIC.pem ENVELOPE.jsonl: go-securesystemslib's own DSSE verifier, with its own
// key loading, over the first envelope of an in-toto bundle; the verified payload on stdout,
// exit 0; exit 1 where it does not verify. The tests use it to show that the register's and
// the checker's envelopes are what the official Go implementation accepts.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"github.com/secure-systems-lab/go-securesystemslib/signerverifier"
)

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

func verifier(path string) dsse.Verifier {
	pem, err := os.ReadFile(path)
	if err != nil {
		fail("cannot read %s: %v", path, err)
	}
	key, err := signerverifier.LoadKey(pem)
	if err != nil {
		fail("not a key: %v", err)
	}
	switch key.KeyType {
	case signerverifier.ED25519KeyType:
		v, err := signerverifier.NewED25519SignerVerifierFromSSLibKey(key)
		if err != nil {
			fail("%v", err)
		}
		return v
	case signerverifier.ECDSAKeyType:
		v, err := signerverifier.NewECDSASignerVerifierFromSSLibKey(key)
		if err != nil {
			fail("%v", err)
		}
		return v
	}
	fail("a key of type %s", key.KeyType)
	return nil
}

func main() {
	if len(os.Args) != 3 {
		fail("usage: dsse-verify PUBLIC.pem ENVELOPE.jsonl")
	}
	file, err := os.Open(os.Args[2])
	if err != nil {
		fail("cannot read %s: %v", os.Args[2], err)
	}
	lines := bufio.NewScanner(file)
	lines.Buffer(make([]byte, 1<<20), 8<<20)
	if !lines.Scan() {
		fail("no envelope in %s", os.Args[2])
	}
	var envelope dsse.Envelope
	if err := json.Unmarshal(lines.Bytes(), &envelope); err != nil {
		fail("not an envelope: %v", err)
	}
	ev, err := dsse.NewEnvelopeVerifier(verifier(os.Args[1]))
	if err != nil {
		fail("%v", err)
	}
	_, payload, err := ev.VerifyAndDecode(context.Background(), &envelope)
	if err != nil {
		fail("does not verify: %v", err)
	}
	os.Stdout.Write(payload)
}
