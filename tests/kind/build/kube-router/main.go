// Command netpol runs only the firewall (NetworkPolicy controller: iptables + ipset) of
// github.com/cloudnativelabs/kube-router/v2, the engine kind scenario 19 runs. It is kube-router's
// own start-up sequence for --run-firewall, calling its packages' API; building this instead of
// its whole command leaves out the BGP router, the IPVS proxy, the AWS client and the Docker client
// (582 packages instead of 962), so a cold build takes a fraction of the time.
//
// Why kube-router and not sigs.k8s.io/kube-network-policies (v0.7.0/v0.8.0, the ones the proxy
// serves): that diverts packets with the nftables `queue` expression, and this machine's kernel is
// built without it (CONFIG_NFT_QUEUE is not set): its nftables batch fails with "netlink receive:
// no such file or directory". The kernel has the xtables NFQUEUE target, ip_set and xt_set, which
// is what kube-router uses.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/cloudnativelabs/kube-router/v2/pkg/controllers/netpol"
	"github.com/cloudnativelabs/kube-router/v2/pkg/healthcheck"
	"github.com/cloudnativelabs/kube-router/v2/pkg/options"
	"github.com/spf13/pflag"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "%s\n", err)
		os.Exit(1)
	}
}

// run parses kube-router's own flags and runs its health controller and firewall until SIGTERM.
func run() error {
	klog.InitFlags(nil)
	config := options.NewKubeRouterConfig()
	config.AddFlags(pflag.CommandLine)
	pflag.Parse()
	if err := flag.Set("v", config.VLevel); err != nil {
		return err
	}
	if config.RunRouter || config.RunServiceProxy || config.RunLoadBalancer || !config.RunFirewall {
		return fmt.Errorf("this build runs the firewall only: pass --run-firewall=true --run-router=false --run-service-proxy=false")
	}
	var restConfig *rest.Config
	var err error
	if config.Master != "" || config.Kubeconfig != "" {
		restConfig, err = clientcmd.BuildConfigFromFlags(config.Master, config.Kubeconfig)
	} else {
		restConfig, err = rest.InClusterConfig()
	}
	if err != nil {
		return fmt.Errorf("kubernetes client configuration: %w", err)
	}
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return err
	}

	var wg sync.WaitGroup
	var ipsetMutex sync.Mutex
	stopCh := make(chan struct{})
	healthChan := make(chan *healthcheck.ControllerHeartbeat, 10)
	hc, err := healthcheck.NewHealthController(config)
	if err != nil {
		return err
	}
	wg.Add(1)
	go hc.RunServer(stopCh, &wg)

	factory := informers.NewSharedInformerFactory(client, 0)
	podInformer := factory.Core().V1().Pods().Informer()
	nsInformer := factory.Core().V1().Namespaces().Informer()
	npInformer := factory.Networking().V1().NetworkPolicies().Informer()
	factory.Start(stopCh)
	synced := make(chan struct{})
	go func() { factory.WaitForCacheSync(stopCh); close(synced) }()
	select {
	case <-synced:
	case <-time.After(config.CacheSyncTimeout):
		return fmt.Errorf("informer caches not synced after %s", config.CacheSyncTimeout)
	}
	hc.SetAlive()
	wg.Add(1)
	go hc.RunCheck(healthChan, stopCh, &wg)

	iptables, ipsets, err := netpol.NewIPTablesHandlers(config)
	if err != nil {
		return fmt.Errorf("iptables handlers: %w", err)
	}
	npc, err := netpol.NewNetworkPolicyController(client, config, podInformer, npInformer, nsInformer,
		&ipsetMutex, iptables, ipsets)
	if err != nil {
		return fmt.Errorf("network policy controller: %w", err)
	}
	if _, err := podInformer.AddEventHandler(npc.PodEventHandler); err != nil {
		return err
	}
	if _, err := nsInformer.AddEventHandler(npc.NamespaceEventHandler); err != nil {
		return err
	}
	if _, err := npInformer.AddEventHandler(npc.NetworkPolicyEventHandler); err != nil {
		return err
	}
	wg.Add(1)
	go npc.Run(healthChan, stopCh, &wg)

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	<-signals
	klog.Info("shutting down the firewall")
	close(stopCh)
	wg.Wait()
	return nil
}
