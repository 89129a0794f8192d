// Command smoke-agent is the single static binary inside the image the kind
// smoke tests build locally and load into the cluster.
//
//	smoke-agent serve                 HTTP on :8080, "ok <hostname>"; exits on SIGTERM
//	smoke-agent lookup NAME [URL]     resolve NAME, then GET URL; exit 1 on failure
//	smoke-agent trap-term [SECONDS]   log SIGTERM; exit SECONDS after it (default: never)
//	smoke-agent sleep-exit SECONDS    sleep, print "job done", exit 0
package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

func say(format string, a ...any) { fmt.Printf(format+"\n", a...) }

func serve() int {
	host, _ := os.Hostname()
	http.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintf(w, "ok %s\n", host) })
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-term; say("SIGTERM received, exiting"); os.Exit(0) }()
	say("serving on :8080")
	if err := http.ListenAndServe(":8080", nil); err != nil {
		say("serve: %v", err)
		return 1
	}
	return 0
}

func lookup(args []string) int {
	if len(args) < 1 {
		say("usage: lookup NAME [URL]")
		return 2
	}
	addrs, err := net.LookupHost(args[0])
	if err != nil {
		say("lookup %s: %v", args[0], err)
		return 1
	}
	say("resolved %s -> %v", args[0], addrs)
	if len(args) > 1 {
		c := http.Client{Timeout: 10 * time.Second}
		resp, err := c.Get(args[1])
		if err != nil {
			say("get %s: %v", args[1], err)
			return 1
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		say("got %d: %s", resp.StatusCode, body)
		if resp.StatusCode != http.StatusOK {
			return 1
		}
	}
	return 0
}

func trapTerm(args []string) int {
	exitAfter := -1
	if len(args) > 0 {
		n, err := strconv.Atoi(args[0])
		if err != nil {
			say("trap-term: bad SECONDS %q", args[0])
			return 2
		}
		exitAfter = n
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	say("waiting for SIGTERM")
	<-term
	say("SIGTERM received at %d", time.Now().Unix())
	if exitAfter < 0 {
		select {} // keep running until SIGKILL
	}
	time.Sleep(time.Duration(exitAfter) * time.Second)
	say("exiting after grace work")
	return 0
}

func main() {
	if len(os.Args) < 2 {
		say("usage: smoke-agent serve|lookup|trap-term|sleep-exit ...")
		os.Exit(2)
	}
	code := 2
	switch os.Args[1] {
	case "serve":
		code = serve()
	case "lookup":
		code = lookup(os.Args[2:])
	case "trap-term":
		code = trapTerm(os.Args[2:])
	case "sleep-exit":
		n, _ := strconv.Atoi(os.Args[2])
		time.Sleep(time.Duration(n) * time.Second)
		say("job done")
		code = 0
	default:
		say("unknown command %q", os.Args[1])
	}
	os.Exit(code)
}
