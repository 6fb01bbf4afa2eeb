package main

import (
	"os"

	"github.com/spf13/pflag"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // JSON log format, as upstream mains do
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics, as upstream mains do
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric, as upstream mains do
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kwokconfig "sigs.k8s.io/kwok/pkg/config"
	kwokcmd "sigs.k8s.io/kwok/pkg/kwok/cmd"
	kwoklog "sigs.k8s.io/kwok/pkg/log"
	"sigs.k8s.io/kwok/pkg/utils/signals"
	_ "time/tzdata" // CronJob time zones, as upstream mains do
)

func runAPIServer(args []string) int {
	cmd := apiserver.NewAPIServerCommand()
	cmd.SetArgs(args)
	return cli.Run(cmd)
}

func runScheduler(args []string) int {
	cmd := scheduler.NewSchedulerCommand()
	cmd.SetArgs(args)
	return cli.Run(cmd)
}

func runControllerManager(args []string) int {
	cmd := controllermanager.NewControllerManagerCommand()
	cmd.SetArgs(args)
	return cli.Run(cmd)
}

// runKwok mirrors sigs.k8s.io/kwok/cmd/kwok: global --config/logging flags are
// parsed from os.Args first, then the cobra command runs.
func runKwok(args []string) int {
	// cobra adds pflag.CommandLine to every root command, and Kubernetes
	// packages linked into this binary register flags there at init (e.g. a
	// non-bool --version), which kwok's own cobra --version then trips
	// over. kwok uses none of them: give it an empty global flag set.
	pflag.CommandLine = pflag.NewFlagSet(os.Args[0], pflag.ExitOnError)

	global := pflag.NewFlagSet("global", pflag.ContinueOnError)
	global.ParseErrorsAllowlist.UnknownFlags = true
	global.Usage = func() {}

	ctx := signals.SetupSignalContext()
	ctx, logger := kwoklog.InitFlags(ctx, global)
	ctx, err := kwokconfig.InitFlags(ctx, global)
	if err != nil {
		_, _ = os.Stderr.WriteString(global.FlagUsages())
		logger.Error("Init config flags", "err", err)
		return 1
	}
	cmd := kwokcmd.NewCommand(ctx)
	cmd.PersistentFlags().AddFlagSet(global)
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(ctx); err != nil {
		logger.Error("Execute exit", "err", err)
		return 1
	}
	return 0
}
