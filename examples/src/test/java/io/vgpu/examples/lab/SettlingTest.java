package io.vgpu.examples.lab;

import static io.vgpu.examples.lab.CaughtUpTest.metrics;
import static io.vgpu.examples.lab.CaughtUpTest.node;
import static io.vgpu.examples.lab.CaughtUpTest.pod;
import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.node.ObjectNode;

/**
 * The race scenario 06 lost once: the holder of a namespace's quota is deleted; kube-scheduler sees the
 * delete and asks the extender about the waiting pod before the extender's ledger has seen it, gets "no
 * fit", and waits for a change that never comes. Settling must not end there — the old rule ("every
 * scheduler idle, no pod starting") did — but wait for the extender to catch up and have kube-scheduler
 * try again after it.
 */
class SettlingTest {
  /** A cluster whose state the test sets, and which records what settling asked of it. */
  static final class FakeCluster implements Settling.Cluster {
    List<String> inTransit = new ArrayList<>();
    List<Pod> pods = new ArrayList<>();
    List<Node> nodes = new ArrayList<>(List.of(node("worker", 40960, 20, Map.of())));
    ObjectNode metrics = metrics(40960, List.of(), List.of());
    int retries;

    @Override
    public List<String> inTransit() {
      return inTransit;
    }

    @Override
    public CaughtUp.View view() {
      return new CaughtUp.View(pods, nodes, "nvidia.com/gpu", Map.of(), metrics);
    }

    @Override
    public void retryUnschedulable() {
      retries++;
    }
  }

  private final Settling settling = new Settling();
  private final FakeCluster cluster = new FakeCluster();
  private final Pod holder = pod("team-a", "holder", "Running", true);
  private final Pod quarter = pod("team-a", "quarter", "Pending", false);

  @BeforeEach
  void holderRunsAndQuarterWaits() {
    cluster.pods = new ArrayList<>(List.of(holder, quarter));
    cluster.metrics = metrics(40960, List.of("team-a/holder"), List.of("team-a/holder"));
    // the step that created quarter settles: kube-scheduler found it unschedulable, nothing changed since
    assertThat(settling.waitingFor(cluster)).hasSize(1); // the run's first settle retries once
    assertThat(settling.waitingFor(cluster)).isEmpty();
    cluster.retries = 0;
  }

  @Test
  void afterADeleteTheStepWaitsForTheExtenderToSeeItAndForKubeSchedulersAttemptAfterThat() {
    settling.deleting(holder);
    cluster.pods.remove(holder);
    // kube-scheduler saw the delete, tried quarter, the extender still counted the holder: "no fit", idle
    assertThat(cluster.inTransit()).isEmpty();

    assertThat(settling.waitingFor(cluster)).containsExactly(
        "vgpu scheduler still counts the grant of team-a/holder (the pod is gone)", "device-plugin/worker still reports team-a/holder (the pod is gone)");
    assertThat(cluster.retries).isZero();

    cluster.metrics = metrics(40960, List.of(), List.of()); // the extender's and the node agent's informers caught up
    assertThat(settling.waitingFor(cluster)).containsExactly("kube-scheduler to try its waiting pods again, now that the components have seen what changed");
    assertThat(cluster.retries).isEqualTo(1);

    cluster.inTransit = List.of("team-a/quarter waits to be scheduled (active)");
    assertThat(settling.waitingFor(cluster)).containsExactly("team-a/quarter waits to be scheduled (active)");
    cluster.inTransit = List.of(); // quarter placed
    assertThat(settling.waitingFor(cluster)).isEmpty();
    assertThat(cluster.retries).isEqualTo(1);
  }

  @Test
  void kubeSchedulerTriesAgainEvenWhenTheExtenderCaughtUpBeforeTheLabLooked() {
    settling.deleting(holder);
    cluster.pods.remove(holder);
    cluster.metrics = metrics(40960, List.of(), List.of());

    assertThat(settling.waitingFor(cluster)).isNotEmpty();
    assertThat(cluster.retries).isEqualTo(1);
    assertThat(settling.waitingFor(cluster)).isEmpty();
  }

  @Test
  void aPodThatEndedWhileHoldingAGrantIsAReleaseToo() {
    cluster.pods = new ArrayList<>(List.of(pod("team-a", "holder", "Succeeded", true), quarter));
    cluster.metrics = metrics(40960, List.of(), List.of());

    assertThat(settling.waitingFor(cluster)).isNotEmpty();
    assertThat(cluster.retries).isEqualTo(1);
  }

  @Test
  void aNewRegistrationAndARestartAreChangesToo() {
    cluster.nodes = List.of(node("worker", 81920, 20, Map.of()));
    cluster.metrics = metrics(81920, List.of("team-a/holder"), List.of("team-a/holder"));
    assertThat(settling.waitingFor(cluster)).isNotEmpty();
    assertThat(settling.waitingFor(cluster)).isEmpty();

    settling.restarted();
    assertThat(settling.waitingFor(cluster)).isNotEmpty();
    assertThat(cluster.retries).isEqualTo(2);
  }

  @Test
  void aStepThatReleasedNothingEndsWithoutAnotherAttempt() {
    cluster.pods.add(pod("team-a", "another", "Running", true)); // a create: a new grant is no release
    cluster.metrics = metrics(40960, List.of("team-a/holder", "team-a/another"), List.of("team-a/holder", "team-a/another"));

    assertThat(settling.waitingFor(cluster)).isEmpty();
    assertThat(cluster.retries).isZero();
  }
}
