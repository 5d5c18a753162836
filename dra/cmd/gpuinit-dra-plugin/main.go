// Command gpuinit-dra-plugin is an example DRA kubelet plugin: it publishes
// the node's GPUs (NVIDIA's or AMD's, MIG slices as devices of their own) as
// ResourceSlices, tainted by their health, and serves their health to the
// kubelet's DRAResourceHealth stream, from a gpuinit Runtime's health watch.
// It prepares no claims: it has no CDI specs. Its DaemonSet, RBAC and
// DeviceClass are in deploy/kubernetes/dra.
//
//	gpuinit-dra-plugin -node-name=$NODE_NAME [-driver-name=gpu.gpuinit.io]
//
// It exits 0 at SIGTERM, 1 at a failure, 2 at a bad flag.
package main

import (
	"context"
	"flag"
	"fmt"
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
	var cfg config
	fs := flag.NewFlagSet("gpuinit-dra-plugin", flag.ContinueOnError)
	fs.StringVar(&cfg.driverName, "driver-name", "gpu.gpuinit.io", "the DRA driver's name")
	fs.StringVar(&cfg.nodeName, "node-name", os.Getenv("NODE_NAME"), "the node's name (default $NODE_NAME)")
	fs.StringVar(&cfg.pluginDir, "plugin-dir", "", "the DRA socket's folder (default "+kubeletplugin.KubeletPluginsDir+"/<driver-name>)")
	fs.StringVar(&cfg.registrarDir, "registrar-dir", kubeletplugin.KubeletRegistryDir, "the kubelet's plugin registry")
	fs.DurationVar(&cfg.timeout, "health-timeout", drahealth.DefaultTimeout, "the health check timeout the reports carry")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if cfg.nodeName == "" {
		fmt.Fprintln(os.Stderr, "gpuinit-dra-plugin: -node-name is empty and NODE_NAME is unset: give the node's name (the downward API's spec.nodeName)")
		os.Exit(2)
	}
	if cfg.pluginDir == "" {
		cfg.pluginDir = kubeletplugin.KubeletPluginsDir + "/" + cfg.driverName
	}
	if err := serve(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "gpuinit-dra-plugin:", err)
		os.Exit(1)
	}
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
