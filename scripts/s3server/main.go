// Command s3server serves an in-memory S3-compatible API (gofakes3) on
// 127.0.0.1 for the local emulators. Clients must use path-style addressing.
//
//	s3server -addr 127.0.0.1:4568 -port-file .local/s3.port
package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:4568", "listen address (port 0 picks a free port)")
	portFile := flag.String("port-file", "", "write the chosen port to this file once listening")
	flag.Parse()
	if err := run(*addr, *portFile); err != nil {
		fmt.Fprintln(os.Stderr, "s3server:", err)
		os.Exit(1)
	}
}

func run(addr, portFile string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("refusing to listen on %q: loopback addresses only", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if portFile != "" {
		if err := os.WriteFile(portFile+".tmp", []byte(strconv.Itoa(port)), 0o644); err != nil {
			return err
		}
		if err := os.Rename(portFile+".tmp", portFile); err != nil {
			return err
		}
	}
	faker := gofakes3.New(s3mem.New(), gofakes3.WithLogger(gofakes3.DiscardLog()))
	srv := &http.Server{Handler: faker.Server(), ReadHeaderTimeout: 10 * time.Second}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sigs
		_ = srv.Close()
	}()
	slog.Info("s3server listening", "addr", ln.Addr().String())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
