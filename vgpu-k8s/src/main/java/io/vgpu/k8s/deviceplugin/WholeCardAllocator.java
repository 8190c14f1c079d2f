package io.vgpu.k8s.deviceplugin;

import io.vgpu.api.SchedulableDevice;
import io.vgpu.api.spi.ContainerContract;
import io.vgpu.k8s.deviceplugin.v1beta1.AllocateRequest;
import io.vgpu.k8s.deviceplugin.v1beta1.AllocateResponse;
import io.vgpu.k8s.deviceplugin.v1beta1.ContainerAllocateRequest;
import io.vgpu.k8s.deviceplugin.v1beta1.ContainerPreferredAllocationRequest;
import io.vgpu.k8s.deviceplugin.v1beta1.ContainerPreferredAllocationResponse;
import io.vgpu.k8s.deviceplugin.v1beta1.PreferredAllocationRequest;
import io.vgpu.k8s.deviceplugin.v1beta1.PreferredAllocationResponse;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Allocate for whole cards, as NVIDIA's device plugin answers it (the node agent under KAI Scheduler):
 * each container gets the cards kubelet chose, by UUID, with their device nodes, and nothing else: no
 * interposer, no limits. kubelet keeps the books (which container holds which card); the watchdog
 * reads them back over kubelet's PodResources API. A device ID that is not one of this node's cards is
 * refused.
 */
final class WholeCardAllocator implements DevicePluginService.Allocator {
  /** What a container holding whole cards receives. */
  @FunctionalInterface
  interface WholeCards {
    /**
     * The allocation of {@code uuids}.
     *
     * @param where the request, for messages
     * @throws IllegalArgumentException naming what cannot be served
     */
    ContainerContract.Allocation allocate(String where, List<String> uuids);
  }

  private final AdvertisedDevices advertised;
  private final WholeCards contract;

  WholeCardAllocator(AdvertisedDevices advertised, WholeCards contract) {
    this.advertised = advertised;
    this.contract = contract;
  }

  @Override
  public AllocateResponse allocate(AllocateRequest request) throws PodAllocator.AllocationException {
    Set<String> cards = advertised.devices().stream().map(SchedulableDevice::uuid).collect(Collectors.toSet());
    AllocateResponse.Builder out = AllocateResponse.newBuilder();
    for (ContainerAllocateRequest container : request.getContainerRequestsList()) {
      List<String> ids = container.getDevicesIdsList();
      String where = "Allocate of " + String.join(",", ids);
      Set<String> seen = new HashSet<>();
      for (String id : ids) {
        if (!cards.contains(id)) {
          throw new PodAllocator.AllocationException(where + ": device ID '" + id + "' is not a card of this node");
        }
        if (!seen.add(id)) {
          throw new PodAllocator.AllocationException(where + ": device ID '" + id + "' is asked for twice");
        }
      }
      try {
        out.addContainerResponses(PodAllocator.response(contract.allocate(where, ids)));
      } catch (IllegalArgumentException e) {
        throw new PodAllocator.AllocationException(e.getMessage());
      }
    }
    return out.build();
  }

  /** kubelet's must-include cards, then its available ones in its order, up to the size asked for. */
  @Override
  public PreferredAllocationResponse preferred(PreferredAllocationRequest request) {
    PreferredAllocationResponse.Builder out = PreferredAllocationResponse.newBuilder();
    for (ContainerPreferredAllocationRequest container : request.getContainerRequestsList()) {
      Set<String> chosen = new LinkedHashSet<>(container.getMustIncludeDeviceIDsList());
      for (String id : container.getAvailableDeviceIDsList()) {
        if (chosen.size() >= container.getAllocationSize()) {
          break;
        }
        chosen.add(id);
      }
      out.addContainerResponses(ContainerPreferredAllocationResponse.newBuilder().addAllDeviceIDs(chosen));
    }
    return out.build();
  }
}
