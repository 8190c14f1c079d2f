package io.vgpu.k8s.watchdog;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.grpc.Server;
import io.grpc.stub.StreamObserver;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.spi.ContractSettings;
import io.vgpu.k8s.deviceplugin.UnixSockets;
import io.vgpu.k8s.grant.PodGrants;
import io.vgpu.k8s.podresources.v1.ContainerDevices;
import io.vgpu.k8s.podresources.v1.ContainerResources;
import io.vgpu.k8s.podresources.v1.ListPodResourcesRequest;
import io.vgpu.k8s.podresources.v1.ListPodResourcesResponse;
import io.vgpu.k8s.podresources.v1.PodResources;
import io.vgpu.k8s.podresources.v1.PodResourcesListerGrpc;
import io.vgpu.nvidia.HookLayout;
import io.vgpu.nvidia.HostPreparation;
import io.vgpu.nvidia.NvidiaContainerContract;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Under KAI Scheduler: a fraction container is held to the grant file the agent wrote, a whole-card
 * container to the cards kubelet gave it (read over kubelet's PodResources API on a real unix socket),
 * and either holds 0 on any other card.
 */
class KaiContainerGrantsTest {
  private static final long MIB = 1L << 20;
  private static final String GPU0 = "GPU-0de0a100-0000-4000-8000-000000000000";
  private static final String GPU1 = "GPU-0de0a100-0000-4000-8000-000000000001";

  @TempDir Path dir;

  /** kubelet's PodResourcesLister, answering {@code response} and counting calls. */
  static final class FakeLister extends PodResourcesListerGrpc.PodResourcesListerImplBase {
    final AtomicInteger calls = new AtomicInteger();
    final ListPodResourcesResponse response;

    FakeLister(ListPodResourcesResponse response) {
      this.response = response;
    }

    @Override
    public void list(ListPodResourcesRequest request, StreamObserver<ListPodResourcesResponse> out) {
      calls.incrementAndGet();
      out.onNext(response);
      out.onCompleted();
    }
  }

  static ListPodResourcesResponse kubeletBooks() {
    return ListPodResourcesResponse.newBuilder()
        .addPodResources(PodResources.newBuilder().setNamespace("kai-resource-reservation").setName("gpu-reservation-0a1b2c3d")
            .addContainers(ContainerResources.newBuilder().setName("resource-reservation")
                .addDevices(ContainerDevices.newBuilder().setResourceName("nvidia.com/gpu").addDeviceIds(GPU1))))
        .addPodResources(PodResources.newBuilder().setNamespace("team").setName("whole")
            .addContainers(ContainerResources.newBuilder().setName("main")
                .addDevices(ContainerDevices.newBuilder().setResourceName("example.com/nic").addDeviceIds("nic0"))
                .addDevices(ContainerDevices.newBuilder().setResourceName("nvidia.com/gpu").addDeviceIds(GPU0)))
            .addContainers(ContainerResources.newBuilder().setName("sidecar")))
        .build();
  }

  static Pod pod(String namespace, String name, String uid, String gpus) {
    PodBuilder b = new PodBuilder().withNewMetadata().withNamespace(namespace).withName(name).withUid(uid).endMetadata()
        .withNewSpec().addNewContainer().withName("main").endContainer().addNewContainer().withName("sidecar").endContainer().endSpec();
    if (gpus != null) {
      b.editSpec().editContainer(0).withNewResources().addToLimits("nvidia.com/gpu", new Quantity(gpus)).endResources().endContainer().endSpec();
    }
    return b.build();
  }

  @Test
  void podResourcesIsReadOverKubeletsUnixSocketAndAnOutageIsNoAnswer() throws Exception {
    Path socket = dir.resolve("kubelet.sock");
    FakeLister lister = new FakeLister(kubeletBooks());
    Server server = UnixSockets.serve(socket, lister);
    try (KubeletPodResources kubelet = new KubeletPodResources(socket, "nvidia.com/gpu", Duration.ofSeconds(5))) {
      assertThat(kubelet.list())
          .contains(Map.of("kai-resource-reservation/gpu-reservation-0a1b2c3d/resource-reservation", List.of(GPU1), "team/whole/main", List.of(GPU0)));
      server.shutdownNow().awaitTermination();
      java.nio.file.Files.deleteIfExists(socket);
      assertThat(kubelet.list()).as("kubelet down").isEmpty();
      server = UnixSockets.serve(socket, lister);
      assertThat(kubelet.list()).as("kubelet back").isPresent();
    } finally {
      server.shutdownNow();
    }
  }

  @Test
  void wholeCardsKubeletGaveAreHeldWholeAndOthersNot() throws Exception {
    Path socket = dir.resolve("kubelet.sock");
    FakeLister lister = new FakeLister(kubeletBooks());
    Server server = UnixSockets.serve(socket, lister);
    try (KubeletPodResources kubelet = new KubeletPodResources(socket, "nvidia.com/gpu", Duration.ofSeconds(5))) {
      ContainerGrants grants = new ContainerGrants(new HookLayout(dir.toString()), PodGrants.unverified(), "n1",
          new WholeCardGrants(kubelet::list, "nvidia.com/gpu", () -> Set.of(GPU0, GPU1)));
      grants.newPoll();
      assertThat(grants.of(pod("team", "whole", "u1", "1"), "main")).isEqualTo(new ContainerGrants.Held(Map.of(GPU0, Long.MAX_VALUE)));
      assertThat(grants.of(pod("kai-resource-reservation", "gpu-reservation-0a1b2c3d", "u2", "1"), "resource-reservation"))
          .isEqualTo(new ContainerGrants.Held(Map.of(GPU1, Long.MAX_VALUE)));
      assertThat(grants.of(pod("team", "whole", "u1", "1"), "sidecar")).as("given no card: the ungranted rule").isInstanceOf(ContainerGrants.Ungranted.class);
      assertThat(lister.calls.get()).as("kubelet asked once per poll").isEqualTo(1);
      grants.newPoll();
      grants.of(pod("team", "whole", "u1", "1"), "main");
      assertThat(lister.calls.get()).isEqualTo(2);
    } finally {
      server.shutdownNow();
    }
  }

  @Test
  void withoutKubeletAContainerAskingForCardsHoldsEveryCardWhole() {
    ContainerGrants grants = new ContainerGrants(new HookLayout(dir.toString()), PodGrants.unverified(), "n1",
        new WholeCardGrants(Optional::empty, "nvidia.com/gpu", () -> Set.of(GPU0, GPU1)));
    grants.newPoll();
    assertThat(grants.of(pod("team", "whole", "u1", "1"), "main")).isEqualTo(new ContainerGrants.Held(Map.of(GPU0, Long.MAX_VALUE, GPU1, Long.MAX_VALUE)));
    assertThat(grants.of(pod("team", "whole", "u1", "1"), "sidecar")).isInstanceOf(ContainerGrants.Ungranted.class);
    assertThat(grants.of(pod("team", "zero", "u3", "0"), "main")).isInstanceOf(ContainerGrants.Ungranted.class);
  }

  @Test
  void aKaiFractionContainerIsHeldToItsGrantFileOnItsCardsOnly() throws Exception {
    HookLayout layout = new HookLayout(dir.toString());
    NvidiaContainerContract contract = new NvidiaContainerContract(ContractSettings.DEFAULT.withHookPath(dir.toString()));
    HostPreparation.writeProtected(Path.of(layout.kaiLimitsFile("u9", "main")),
        contract.kaiLimitsFile(new PodRef("team", "shared"), "u9", "main", List.of(new DeviceGrant(GPU1, "NVIDIA", 20889, 0))));
    ContainerGrants grants = new ContainerGrants(layout, PodGrants.unverified(), "n1", new WholeCardGrants(Optional::empty, "nvidia.com/gpu", () -> Set.of(GPU0, GPU1)));
    grants.newPoll();
    ContainerGrants.Holding held = grants.of(pod("team", "shared", "u9", null), "main");
    assertThat(held).isEqualTo(new ContainerGrants.Held(Map.of(GPU1, 20889 * MIB)));
    assertThat(((ContainerGrants.Held) held).bytes().getOrDefault(GPU0, 0L)).as("a card it was not given").isZero();
  }
}
