package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.vgpu.api.CardPortion;
import io.vgpu.api.ContainerRequest;
import io.vgpu.api.PodRef;
import io.vgpu.api.PodRequest;
import io.vgpu.core.Engine;
import io.vgpu.core.NodeDevices;
import io.vgpu.core.queue.QueueResource;
import io.vgpu.core.queue.QueueSpec;
import io.vgpu.core.queue.ResourceTerms;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.kai.KaiDialect;
import io.vgpu.k8s.pod.PodJson;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** A golden scrape of the per-queue gauges: KAI's division of an A100 node between two queues. */
class QueueMetricsTest {
  private final Engine engine = Engine.builder().config(DeviceConfig.DEFAULT.engineConfig()).build();
  private final List<Pod> pods = new ArrayList<>();
  private final Node node = new NodeBuilder().withNewMetadata().withName("n0").endMetadata()
      .withNewStatus().addToAllocatable("cpu", new Quantity("16")).addToAllocatable("memory", new Quantity("64Gi")).endStatus().build();

  private String scrape() throws Exception {
    PrometheusRegistry registry = new PrometheusRegistry();
    registry.register(new QueueMetrics(engine, () -> pods, () -> List.of(node), p -> KaiDialect.speaks(p, "kai-scheduler"), KaiDialect::queueOf));
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    PrometheusTextFormatWriter.create().write(out, registry.scrape());
    return out.toString(StandardCharsets.UTF_8);
  }

  private void place(String name, String queue, ContainerRequest container) {
    PodRequest request = PodRequest.of(new PodRef("default", name), List.of(container)).withQueue(queue);
    var placement = engine.filter(engine.compile(request), null, false).placement().orElseThrow();
    assertThat(engine.reserve(placement).reserved()).isTrue();
  }

  private static Pod pod(String json) {
    return PodJson.fromTree(PodJson.mapper().readTree(json.replace('\'', '"')));
  }

  /**
   * research: one whole card held and half a card waiting (1.5 of its quota 2, limit 2), 500m of CPU
   * (quota -1: the node's 16 cores); default-queue (quota -1: both cards): 0.51 held (KAI's portion of
   * 20480 MiB) and 10240 / 40900 waiting. Absent terms are 0: a memory quota of 0 deserves nothing, a
   * limit of 0 is a limit, an unlimited one has no limit gauge.
   */
  @Test
  void eachQueuesShareOfTheClusterInKaisUnits() throws Exception {
    engine.upsertNode(new NodeDevices("n0", ClusterHarness.cards("GPU-00000000-0000-0000-0000-0000000000", 2, 40960), Set.of()));
    engine.upsertQueue(new QueueSpec("research", Optional.empty(), 100, Map.of(
        QueueResource.GPU, new ResourceTerms(2, 2, 1), QueueResource.CPU, new ResourceTerms(-1, -1, 1))));
    engine.upsertQueue(new QueueSpec("default-queue", Optional.empty(), 100, Map.of(QueueResource.GPU, new ResourceTerms(-1, -1, 1))));
    place("whole", "research", ContainerRequest.devices("app", 1));
    place("memory", "default-queue", ContainerRequest.devices("app", 1).withPortion(CardPortion.ofMemory(20480)));
    // Waiting: half a card in research (KAI counts round(0.5 x 100) / 100), and 10240 MiB in default-queue
    // (KAI counts 10240 / 40900, unrounded), asking for 500m of CPU.
    pods.add(pod("{'metadata':{'name':'half','namespace':'default','labels':{'kai.scheduler/queue':'research'},'annotations':{'gpu-fraction':'0.5'}},"
        + "'spec':{'containers':[{'name':'app','resources':{'limits':{'nvidia.com/gpu':'1','nvidia.com/gpucores':'0'},'requests':{'cpu':'500m'}}}]}}"));
    pods.add(pod("{'metadata':{'name':'quarter','namespace':'default','annotations':{'gpu-memory':'10240'}},"
        + "'spec':{'containers':[{'name':'app','resources':{'limits':{'nvidia.com/gpu':'1','nvidia.com/gpucores':'0'}}}]}}"));
    // Neither a pod of another dialect nor a placed one counts as waiting.
    pods.add(pod("{'metadata':{'name':'hami','namespace':'default'},'spec':{'containers':[{'name':'app','resources':{'limits':{'nvidia.com/gpu':'1'}}}]}}"));
    pods.add(pod("{'metadata':{'name':'whole','namespace':'default','labels':{'kai.scheduler/queue':'research'}},'spec':{'nodeName':'n0','containers':[{'name':'app'}]}}"));
    assertThat(scrape()).isEqualTo("""
        # HELP vgpu_queue_allocated What the pods charged to a KAI queue hold
        # TYPE vgpu_queue_allocated gauge
        vgpu_queue_allocated{queue="default-queue",resource="cpu"} 0.0
        vgpu_queue_allocated{queue="default-queue",resource="gpu"} 0.51
        vgpu_queue_allocated{queue="default-queue",resource="memory"} 0.0
        vgpu_queue_allocated{queue="research",resource="cpu"} 0.0
        vgpu_queue_allocated{queue="research",resource="gpu"} 1.0
        vgpu_queue_allocated{queue="research",resource="memory"} 0.0
        # HELP vgpu_queue_deserved A KAI queue's deserved quota as resolved (-1 becomes the amount divided)
        # TYPE vgpu_queue_deserved gauge
        vgpu_queue_deserved{queue="default-queue",resource="cpu"} 0.0
        vgpu_queue_deserved{queue="default-queue",resource="gpu"} 2.0
        vgpu_queue_deserved{queue="default-queue",resource="memory"} 0.0
        vgpu_queue_deserved{queue="research",resource="cpu"} 16000.0
        vgpu_queue_deserved{queue="research",resource="gpu"} 2.0
        vgpu_queue_deserved{queue="research",resource="memory"} 0.0
        # HELP vgpu_queue_fair_share A KAI queue's fair share, as KAI's proportion plugin divides the cluster
        # TYPE vgpu_queue_fair_share gauge
        vgpu_queue_fair_share{queue="default-queue",resource="cpu"} 0.0
        vgpu_queue_fair_share{queue="default-queue",resource="gpu"} 0.7603667481662592
        vgpu_queue_fair_share{queue="default-queue",resource="memory"} 0.0
        vgpu_queue_fair_share{queue="research",resource="cpu"} 500.0
        vgpu_queue_fair_share{queue="research",resource="gpu"} 1.5
        vgpu_queue_fair_share{queue="research",resource="memory"} 0.0
        # HELP vgpu_queue_limit A KAI queue's limit (absent: none)
        # TYPE vgpu_queue_limit gauge
        vgpu_queue_limit{queue="default-queue",resource="cpu"} 0.0
        vgpu_queue_limit{queue="default-queue",resource="memory"} 0.0
        vgpu_queue_limit{queue="research",resource="gpu"} 2.0
        vgpu_queue_limit{queue="research",resource="memory"} 0.0
        # HELP vgpu_queue_requested What a KAI queue's pods hold and ask for, capped by its limit
        # TYPE vgpu_queue_requested gauge
        vgpu_queue_requested{queue="default-queue",resource="cpu"} 0.0
        vgpu_queue_requested{queue="default-queue",resource="gpu"} 0.7603667481662592
        vgpu_queue_requested{queue="default-queue",resource="memory"} 0.0
        vgpu_queue_requested{queue="research",resource="cpu"} 500.0
        vgpu_queue_requested{queue="research",resource="gpu"} 1.5
        vgpu_queue_requested{queue="research",resource="memory"} 0.0
        """);
  }
}
