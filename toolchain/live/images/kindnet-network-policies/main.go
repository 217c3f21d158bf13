// Command kindnet-network-policies runs kindnetd's network-policy controller alone: the
// controller of sigs.k8s.io/kube-network-policies v0.8.0, started with exactly the Config and
// informers kindnetd passes it (kind 20ccfc88 images/kindnetd/cmd/kindnetd/main.go, lines 71-104
// for the client and 212-244 for the controller). The live tier's node image carries a stand-in
// CNI when kind's kindnetd source is not given (KINDNET_SRC); this program, built from the served
// module at kindnetd's pinned versions (go.mod: kindnetd's own go.mod), judges NetworkPolicies
// there as kindnetd would. What it leaves out of kindnetd: routes, the CNI config, the masquerade
// agent and DNS caching, none of which decides a policy verdict.
package main

import (
	"context"
	"flag"
	"os"
	"os/signal"

	"golang.org/x/sys/unix"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/kube-network-policies/pkg/networkpolicy"
)

// kindnetd's values (main.go 220-226).
const (
	queueID     = 101
	nfTableName = "kindnet-network-policies"
)

func main() {
	klog.InitFlags(nil)
	_ = flag.Set("logtostderr", "true")
	flag.Parse()

	config, err := rest.InClusterConfig()
	if err != nil {
		klog.Fatalf("in-cluster config: %v", err)
	}
	config.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	config.ContentType = "application/vnd.kubernetes.protobuf"
	clientset, err := kubernetes.NewForConfig(config)
	if err != nil {
		klog.Fatalf("client: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, unix.SIGINT, unix.SIGTERM)
	go func() {
		<-signals
		klog.Infof("Exiting: received signal")
		cancel()
	}()

	// kindnetd: "on kind nodes the hostname matches the node name".
	nodeName, err := os.Hostname()
	if err != nil {
		klog.Fatalf("couldn't determine hostname: %v", err)
	}
	factory := informers.NewSharedInformerFactory(clientset, 0)
	controller, err := networkpolicy.NewController(
		clientset,
		factory.Networking().V1().NetworkPolicies(),
		factory.Core().V1().Namespaces(),
		factory.Core().V1().Pods(),
		factory.Core().V1().Nodes(),
		nil,
		nil,
		nil,
		networkpolicy.Config{
			FailOpen:            true,
			QueueID:             queueID,
			NodeName:            nodeName,
			NetfilterBug1766Fix: true,
			NFTableName:         nfTableName,
		})
	if err != nil {
		klog.Fatalf("network policy controller: %v", err)
	}
	factory.Start(ctx.Done())
	if err := controller.Run(ctx); err != nil && ctx.Err() == nil {
		klog.Fatalf("network policy controller: %v", err)
	}
}
