package io.vgpu.examples.lab;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.vgpu.api.SchedulableDevice;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.codec.NodeRegisterCodec;
import io.vgpu.k8s.pod.PodJson;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.node.ObjectNode;

/** The components have caught up with the API server when what they export agrees with its objects. */
class CaughtUpTest {
  static final String CARD = "GPU-12345678-1234-1234-1234-123456780000";
  static final double MIB = 1024 * 1024;

  static Pod pod(String namespace, String name, String phase, boolean grant) {
    PodBuilder b = new PodBuilder().withNewMetadata().withNamespace(namespace).withName(name).withUid(name + "-uid").endMetadata()
        .withNewStatus().withPhase(phase).endStatus();
    if (grant) {
      b.editMetadata().addToAnnotations(HamiAnnotations.ASSIGNED_NODE, "worker").addToAnnotations(HamiAnnotations.DEVICES_ALLOCATED, CARD + ",NVIDIA,10000,10:;").endMetadata();
    }
    return b.build();
  }

  static Node node(String name, int memoryMiB, int advertised, Map<String, String> labels) {
    String register = NodeRegisterCodec.encode(List.of(new SchedulableDevice(CARD, 0, "NVIDIA A100-SXM4-40GB", memoryMiB, 100, 10, 0, true, SchedulableDevice.MODE_SHARED)));
    return new NodeBuilder().withNewMetadata().withName(name).withLabels(labels).addToAnnotations(HamiAnnotations.NODE_REGISTER, register).endMetadata()
        .withNewStatus().addToAllocatable("nvidia.com/gpu", new Quantity(Integer.toString(advertised))).endStatus().build();
  }

  /** One scrape: the scheduler holds CARD of worker at {@code cardMiB} and counts the grants of {@code counted}; worker's agent reports {@code reported}. */
  static ObjectNode metrics(int cardMiB, List<String> counted, List<String> reported) {
    ObjectNode out = PodJson.mapper().createObjectNode();
    ObjectNode scheduler = out.putObject("scheduler");
    if (cardMiB > 0) {
      scheduler.put("hami_gpu_memory_limit_bytes{device_index=\"0\",device_type=\"NVIDIA A100-SXM4-40GB\",device_uuid=\"" + CARD + "\",node=\"worker\"}", cardMiB * MIB);
    }
    for (String pod : counted) {
      String[] ref = pod.split("/");
      scheduler.put("hami_vgpu_memory_allocated_bytes{container_index=\"0\",device_uuid=\"" + CARD + "\",namespace=\"" + ref[0] + "\",node=\"worker\",pod=\"" + ref[1] + "\"}",
          10000 * MIB);
    }
    ObjectNode agent = out.putObject("nodes").putObject("worker");
    agent.put("hami_host_gpu_memory_used_bytes{device_index=\"0\",device_type=\"NVIDIA A100-SXM4-40GB\",device_uuid=\"" + CARD + "\",node=\"worker\"}", 0);
    for (String pod : reported) {
      String[] ref = pod.split("/");
      agent.put("hami_vgpu_memory_limit_bytes{container=\"gpu\",device_uuid=\"" + CARD + "\",namespace=\"" + ref[0] + "\",pod=\"" + ref[1] + "\",vdevice_index=\"0\"}", 10000 * MIB);
    }
    return out;
  }

  static CaughtUp.View view(List<Pod> pods, List<Node> nodes, ObjectNode metrics) {
    return new CaughtUp.View(pods, nodes, "nvidia.com/gpu", Map.of(), metrics);
  }

  @Test
  void componentsThatAgreeWithTheApiServerAreCaughtUp() {
    CaughtUp.View view = view(List.of(pod("team-a", "holder", "Running", true)), List.of(node("worker", 40960, 20, Map.of())),
        metrics(40960, List.of("team-a/holder"), List.of("team-a/holder")));

    assertThat(CaughtUp.lagging(view)).isEmpty();
  }

  @Test
  void aGrantStillCountedForAPodThatIsGoneOrEndedIsLag() {
    CaughtUp.View view = view(List.of(pod("team-a", "done", "Succeeded", true)), List.of(node("worker", 40960, 20, Map.of())),
        metrics(40960, List.of("team-a/holder", "team-a/done"), List.of("team-a/holder")));

    assertThat(CaughtUp.lagging(view)).containsExactly(
        "vgpu scheduler still counts the grant of team-a/done (the pod has succeeded)",
        "vgpu scheduler still counts the grant of team-a/holder (the pod is gone)",
        "device-plugin/worker still reports team-a/holder (the pod is gone)");
  }

  @Test
  void aCardHeldAtMemoryItsNodeNoLongerRegistersIsLag() {
    // the node agents restarted with deviceMemoryScaling 2: the node registers 81920 MiB
    CaughtUp.View view = view(List.of(), List.of(node("worker", 81920, 20, Map.of())), metrics(40960, List.of(), List.of()));

    assertThat(CaughtUp.lagging(view)).containsExactly("vgpu scheduler holds " + CARD + " of node worker at 40960 MiB, the node registers 81920 MiB");
  }

  @Test
  void aNodeThatRegistersCardsItAdvertisesIsLagUntilTheSchedulerHoldsThem() {
    assertThat(CaughtUp.lagging(view(List.of(), List.of(node("worker", 40960, 20, Map.of())), metrics(0, List.of(), List.of()))))
        .containsExactly("vgpu scheduler has not registered node worker yet");
    // a node advertising no devices is withheld by the scheduler; one its node selector leaves out is never registered
    assertThat(CaughtUp.lagging(view(List.of(), List.of(node("worker", 40960, 0, Map.of())), metrics(0, List.of(), List.of())))).isEmpty();
    assertThat(CaughtUp.lagging(new CaughtUp.View(List.of(), List.of(node("worker", 40960, 20, Map.of())), "nvidia.com/gpu", Map.of("gpu", "on"),
        metrics(0, List.of(), List.of())))).isEmpty();
  }

  @Test
  void aComponentWhoseMetricsCannotBeReadIsLag() {
    ObjectNode metrics = PodJson.mapper().createObjectNode();
    metrics.putObject("scheduler").put("scrape_error", "Connection refused");
    metrics.putObject("nodes").putObject("worker").put("scrape_error", "Connection refused");

    assertThat(CaughtUp.lagging(view(List.of(), List.of(), metrics)))
        .containsExactly("vgpu scheduler's metrics cannot be read: Connection refused", "device-plugin/worker's metrics cannot be read: Connection refused");
  }
}
