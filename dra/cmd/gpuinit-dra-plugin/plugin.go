package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/dra/drahealth"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"
)

// config is what the plugin is told: its flags.
type config struct {
	driverName   string // the DRA driver's name, which DeviceClasses select
	nodeName     string // the node: the pool's name and the slices' owner
	pluginDir    string // the DRA socket's folder, the kubelet's plugins/<driver>
	registrarDir string // the kubelet's plugin registry
	timeout      time.Duration
}

// errNoClaims is each claim's preparation failure: the example publishes
// and watches devices, and prepares none.
var errNoClaims = errors.New("gpuinit-dra-plugin prepares no claims: it has no CDI specs to give the container runtime; use a vendor's DRA driver for claims")

// plugin is the kubelet plugin: health from its Feed, no claims.
type plugin struct {
	*drahealth.Feed
	cancel context.CancelCauseFunc // stops run at a fatal error
}

func (p *plugin) PrepareResourceClaims(_ context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, c := range claims {
		out[c.UID] = kubeletplugin.PrepareResult{Err: errNoClaims}
	}
	return out, nil
}

func (p *plugin) UnprepareResourceClaims(_ context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	out := make(map[types.UID]error, len(claims))
	for _, c := range claims {
		out[c.UID] = nil // nothing was prepared
	}
	return out, nil
}

// HandleError logs err; one that is not recoverable stops the plugin.
func (p *plugin) HandleError(ctx context.Context, err error, msg string) {
	klog.FromContext(ctx).Error(err, msg)
	if !errors.Is(err, kubeletplugin.ErrRecoverable) {
		p.cancel(fmt.Errorf("%s: %w", msg, err))
	}
}

// run serves rt's devices until ctx ends: it registers with the kubelet,
// serves their health, and publishes them as the node's ResourceSlices,
// again at each change of their health and at each of the Feed's re-sends
// (a stale device's taint). It returns nil when ctx ends, or the fatal
// error that stopped it.
func run(ctx context.Context, rt *device.Runtime, client kubernetes.Interface, cfg config) error {
	devices, err := rt.Devices(ctx)
	if err != nil {
		return fmt.Errorf("the GPUs: %w", err)
	}
	src := drahealth.FromRuntime(rt)
	feed, err := drahealth.NewFeed(src, devices, drahealth.Options{Pool: cfg.nodeName, Timeout: cfg.timeout})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	p := &plugin{Feed: feed, cancel: cancel}
	helper, err := kubeletplugin.Start(ctx, p, kubeletplugin.DriverName(cfg.driverName),
		kubeletplugin.NodeName(cfg.nodeName), kubeletplugin.KubeClient(client),
		kubeletplugin.PluginDataDirectoryPath(cfg.pluginDir), kubeletplugin.RegistrarDirectoryPath(cfg.registrarDir))
	if err != nil {
		return fmt.Errorf("the kubelet plugin: %w", err)
	}
	defer helper.Stop()
	resend := time.NewTicker(feed.Resend())
	defer resend.Stop()
	for {
		snap := src.Health()
		if err := helper.PublishResources(ctx, resources(cfg.nodeName, rt.Name(), devices, feed)); err != nil {
			return fmt.Errorf("publishing the ResourceSlices: %w", err)
		}
		select {
		case <-ctx.Done():
			if cause := context.Cause(ctx); !errors.Is(cause, context.Canceled) {
				return cause
			}
			return nil
		case <-snap.Changed:
		case <-resend.C:
		}
	}
}
