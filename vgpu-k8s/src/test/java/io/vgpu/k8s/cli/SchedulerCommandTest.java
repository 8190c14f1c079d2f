package io.vgpu.k8s.cli;

import static io.vgpu.k8s.cli.Run.vgpu;
import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** {@code vgpu scheduler}'s flag checks (one line each, exit code 2, before any connection) and its warm-up alone. */
class SchedulerCommandTest {
  @Test
  void anUnknownStackIsOneLine() {
    Run run = vgpu("scheduler", "--stack", "volcano");
    assertThat(run.code()).isEqualTo(2);
    assertThat(run.err()).isEqualTo("vgpu: --stack: 'volcano' is not one of hami, kai\n");
  }

  @Test
  void theExtendersFlagsAreRefusedUnderKai() {
    for (String flag : SchedulerCommand.HAMI_STACK_ONLY) {
      String arg = switch (flag) {
        case "--leader-elect", "--legacy-metrics", "--place-cpu-only-pods", "--kai-dialect", "--warm-up-only" -> flag;
        case "--node-lock-timeout", "--node-lock-retry-timeout", "--stale-reservation-timeout", "--sync-timeout", "--gang-hold-timeout" -> flag + "=1m";
        case "--node-label-selector" -> flag + "=gpu=on";
        case "--warm-up-rounds" -> flag + "=0";
        case "--force-overwrite-default-scheduler" -> flag + "=false";
        default -> flag + "=x";
      };
      Run run = vgpu("scheduler", "--stack=kai", arg);
      assertThat(run.code()).as(flag).isEqualTo(2);
      assertThat(run.err()).isEqualTo("vgpu: " + flag + " applies only with --stack hami: with --stack kai vgpu serves no extender\n");
    }
  }

  @Test
  void aFlagTheOptionsRefuseIsOneLine() {
    Run negative = vgpu("scheduler", "--warm-up-rounds=-1");
    assertThat(negative.code()).isEqualTo(2);
    assertThat(negative.err()).isEqualTo("vgpu: --warm-up-rounds -1 must not be negative\n");
  }

  @Test
  void aRelativeHookPathIsOneLine() {
    Run run = vgpu("scheduler", "--stack", "kai", "--hook-path", "usr/local");
    assertThat(run.code()).isEqualTo(2);
    assertThat(run.err()).isEqualTo("vgpu: --hook-path: HOOK_PATH 'usr/local' must be an absolute path without a trailing slash\n");
  }

  @Test
  void theHookPathIsRefusedInTheHamiStack() {
    Run run = vgpu("scheduler", "--hook-path", "/usr/local");
    assertThat(run.code()).isEqualTo(2);
    assertThat(run.err()).isEqualTo("vgpu: --hook-path applies only with --stack kai (in the hami stack the node agent alone mounts the interposer)\n");
  }

  @Test
  void theDialectsSettingsNeedTheDialect() {
    for (String arg : new String[] {"--kai-scheduler-name=kai", "--gang-hold-timeout=30s"}) {
      Run run = vgpu("scheduler", arg);
      assertThat(run.code()).as(arg).isEqualTo(2);
      assertThat(run.err()).isEqualTo("vgpu: " + arg.substring(0, arg.indexOf('=')) + " applies only with --kai-dialect\n");
    }
  }

  @Test
  void theWarmUpAloneRunsItsRoundsWithTlsAndReachesNoCluster() {
    // A kubeconfig that does not exist: reaching for a cluster would fail the run.
    Run run = vgpu("scheduler", "--warm-up-only", "--warm-up-rounds=200", "--kubeconfig=/nonexistent/kubeconfig");

    assertThat(run.err()).isEmpty();
    assertThat(run.code()).isZero();
    assertThat(run.out()).matches("warm-up only: 200 rounds over the loopback with TLS, 1[0-9]{2} placed, [1-9][0-9]* writes answered, [1-9][0-9]* pod watch events followed, in [0-9]+ ms\n");
  }

  @Test
  void aWarmUpAloneWithoutRoundsIsOneLine() {
    Run run = vgpu("scheduler", "--warm-up-only", "--warm-up-rounds=0");
    assertThat(run.code()).isEqualTo(2);
    assertThat(run.err()).isEqualTo("vgpu: --warm-up-only: --warm-up-rounds is 0, so there is nothing to run\n");
  }
}
