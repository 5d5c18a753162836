// Command gpuinit-dra-plugin is an example DRA kubelet plugin: it publishes
// the node's GPUs (NVIDIA's or AMD's, MIG slices as devices of their own) as
// ResourceSlices, tainted by their health, and serves their health to the
// kubelet's DRAResourceHealth stream, from a gpuinit Runtime's health watch.
// It prepares no claims: it has no CDI specs. Its DaemonSet, RBAC and
// DeviceClass are in deploy/kubernetes/dra.
//
//	gpuinit-dra-plugin -node-name=$NODE_NAME [-driver-name=gpu.gpuinit.io]
//
// It exits 0 at SIGTERM and after -h (the usage, on stdout), 1 at a failure,
// 2 at a bad flag.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gpuinit/gpuinit/device"
	_ "github.com/gpuinit/gpuinit/device/backends" // cuda and hip (Linux, cgo), sim
	"github.com/gpuinit/gpuinit/dra/drahealth"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

func main() {
	cfg, exit, done := parseFlags(os.Args[1:], os.Stdout, os.Stderr)
	if done {
		os.Exit(exit)
	}
	if err := serve(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "gpuinit-dra-plugin:", err)
		os.Exit(1)
	}
}

// parseFlags reads the command line. done says that the command ends here,
// with exit: 0 for -h, whose usage goes to stdout as the answer it is; 2 for a
// bad flag or no node name, the error and the usage on stderr.
func parseFlags(args []string, stdout, stderr io.Writer) (cfg config, exit int, done bool) {
	fs := flag.NewFlagSet("gpuinit-dra-plugin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.driverName, "driver-name", "gpu.gpuinit.io", "the DRA driver's name")
	fs.StringVar(&cfg.nodeName, "node-name", os.Getenv("NODE_NAME"), "the node's name (default $NODE_NAME)")
	fs.StringVar(&cfg.pluginDir, "plugin-dir", "", "the DRA socket's folder (default "+kubeletplugin.KubeletPluginsDir+"/<driver-name>)")
	fs.StringVar(&cfg.registrarDir, "registrar-dir", kubeletplugin.KubeletRegistryDir, "the kubelet's plugin registry")
	fs.DurationVar(&cfg.timeout, "health-timeout", drahealth.DefaultTimeout, "the health check timeout the reports carry")
	var usage bytes.Buffer
	fs.Usage = func() {
		fs.SetOutput(&usage)
		defer fs.SetOutput(stderr)
		fmt.Fprint(&usage, "Usage: gpuinit-dra-plugin -node-name=$NODE_NAME [flags]\n\n"+
			"An example DRA kubelet plugin: it publishes the node's GPUs as ResourceSlices, tainted by\n"+
			"their health, and serves their health to the kubelet. It exits 0 at SIGTERM, 1 at a failure,\n"+
			"2 at a bad flag.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			_, _ = stdout.Write(usage.Bytes())
			return cfg, 0, true
		}
		_, _ = stderr.Write(usage.Bytes())
		return cfg, 2, true
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "gpuinit-dra-plugin: unexpected arguments %q\n", fs.Args())
		return cfg, 2, true
	}
	if cfg.nodeName == "" {
		fmt.Fprintln(stderr, "gpuinit-dra-plugin: -node-name is empty and NODE_NAME is unset: give the node's name (the downward API's spec.nodeName)")
		return cfg, 2, true
	}
	if cfg.pluginDir == "" {
		cfg.pluginDir = kubeletplugin.KubeletPluginsDir + "/" + cfg.driverName
	}
	return cfg, 0, false
}

// serve runs the plugin in the cluster until SIGTERM or SIGINT.
func serve(cfg config) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	restConfig, err := rest.InClusterConfig()
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return err
	}
	rt, err := device.Open("") // GPUINIT_BACKEND, else auto: cuda, then hip
	if err != nil {
		return err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rt.Shutdown(ctx)
	}()
	return run(ctx, rt, client, cfg)
}
