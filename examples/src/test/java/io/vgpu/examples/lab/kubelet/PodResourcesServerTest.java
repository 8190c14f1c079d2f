package io.vgpu.examples.lab.kubelet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.vgpu.k8s.podresources.v1.AllocatableResourcesRequest;
import io.vgpu.k8s.podresources.v1.ContainerDevices;
import io.vgpu.k8s.podresources.v1.ContainerResources;
import io.vgpu.k8s.podresources.v1.GetPodResourcesRequest;
import io.vgpu.k8s.podresources.v1.ListPodResourcesRequest;
import io.vgpu.k8s.podresources.v1.PodResources;
import io.vgpu.k8s.podresources.v1.PodResourcesListerGrpc;
import io.vgpu.k8s.deviceplugin.UnixSockets;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** kubelet's PodResources v1 over a real unix socket: List, Get and GetAllocatableResources, on the wire as kubelet answers them. */
class PodResourcesServerTest {
  @TempDir
  Path dir;

  private static final PodResources RESERVATION = PodResources.newBuilder().setName("gpu-reservation-a").setNamespace("kai-resource-reservation")
      .addContainers(ContainerResources.newBuilder().setName("gpu-reservation")
          .addDevices(ContainerDevices.newBuilder().setResourceName("nvidia.com/gpu").addDeviceIds("GPU-0000")))
      .build();

  @Test
  void listsEveryPodsContainersWithTheirDevicesAndTheNodesAllocatableOnes() throws Exception {
    PodResources cpuOnly = PodResources.newBuilder().setName("web").setNamespace("tenants").addContainers(ContainerResources.newBuilder().setName("app")).build();
    Path socket = dir.resolve("kubelet.sock");
    try (PodResourcesServer server = new PodResourcesServer(socket, () -> List.of(RESERVATION, cpuOnly), () -> Map.of("nvidia.com/gpu", List.of("GPU-0000", "GPU-0001")))) {
      ManagedChannel channel = UnixSockets.connect(socket);
      try {
        var stub = PodResourcesListerGrpc.newBlockingStub(channel);
        var list = stub.list(ListPodResourcesRequest.getDefaultInstance());
        assertThat(list.getPodResourcesList()).containsExactly(RESERVATION, cpuOnly);
        // golden bytes: field numbers and types as kubelet's api.proto has them
        assertThat(HexFormat.of().formatHex(RESERVATION.toByteArray())).isEqualTo(
            "0a116770752d7265736572766174696f6e2d61" + "1218" + HexFormat.of().formatHex("kai-resource-reservation".getBytes())
                + "1a2d" + "0a0f" + HexFormat.of().formatHex("gpu-reservation".getBytes())
                + "121a" + "0a0e" + HexFormat.of().formatHex("nvidia.com/gpu".getBytes()) + "1208" + HexFormat.of().formatHex("GPU-0000".getBytes()));
        assertThat(stub.get(GetPodResourcesRequest.newBuilder().setPodName("web").setPodNamespace("tenants").build()).getPodResources()).isEqualTo(cpuOnly);
        assertThatThrownBy(() -> stub.get(GetPodResourcesRequest.newBuilder().setPodName("nope").setPodNamespace("tenants").build()))
            .isInstanceOf(StatusRuntimeException.class).hasMessage("NOT_FOUND: pod nope not found in namespace tenants");
        var allocatable = stub.getAllocatableResources(AllocatableResourcesRequest.getDefaultInstance());
        assertThat(allocatable.getDevicesList()).containsExactly(
            ContainerDevices.newBuilder().setResourceName("nvidia.com/gpu").addDeviceIds("GPU-0000").addDeviceIds("GPU-0001").build());
      } finally {
        channel.shutdownNow();
      }
    }
  }
}
