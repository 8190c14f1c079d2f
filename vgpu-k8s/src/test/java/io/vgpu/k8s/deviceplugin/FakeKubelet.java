package io.vgpu.k8s.deviceplugin;

import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.stub.StreamObserver;
import io.vgpu.k8s.deviceplugin.v1beta1.AllocateRequest;
import io.vgpu.k8s.deviceplugin.v1beta1.AllocateResponse;
import io.vgpu.k8s.deviceplugin.v1beta1.ContainerAllocateRequest;
import io.vgpu.k8s.deviceplugin.v1beta1.DevicePluginGrpc;
import io.vgpu.k8s.deviceplugin.v1beta1.Empty;
import io.vgpu.k8s.deviceplugin.v1beta1.ListAndWatchResponse;
import io.vgpu.k8s.deviceplugin.v1beta1.RegisterRequest;
import io.vgpu.k8s.deviceplugin.v1beta1.RegistrationGrpc;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * kubelet as a device plugin sees it, in-process over real unix sockets: the Registration service on
 * {@code kubelet.sock}, and a client of the plugin's own socket for ListAndWatch and Allocate.
 */
public class FakeKubelet implements AutoCloseable {
  final Path directory;
  final BlockingQueue<RegisterRequest> registrations = new LinkedBlockingQueue<>();
  private Server registration;
  private ManagedChannel plugin;
  private final BlockingQueue<ListAndWatchResponse> lists = new LinkedBlockingQueue<>();

  public FakeKubelet(Path directory) throws IOException {
    this.directory = directory;
    start();
  }

  /** Starts (or, after {@link #stop}, restarts) kubelet's registration socket. */
  void start() throws IOException {
    registration =
        UnixSockets.serve(
            directory.resolve(KubeletPlugin.KUBELET_SOCKET),
            new RegistrationGrpc.RegistrationImplBase() {
              @Override
              public void register(RegisterRequest request, StreamObserver<io.vgpu.k8s.deviceplugin.v1beta1.Empty> response) {
                onRegister();
                registrations.add(request);
                response.onNext(Empty.getDefaultInstance());
                response.onCompleted();
              }
            });
  }

  /** kubelet going down: its socket disappears, as do its connections. */
  void stop() {
    registration.shutdownNow();
    if (plugin != null) {
      plugin.shutdownNow();
      plugin = null;
    }
    directory.resolve(KubeletPlugin.KUBELET_SOCKET).toFile().delete();
  }

  /** Called as a plugin registers, before kubelet answers: what a test wants to see at that moment. */
  void onRegister() {}

  public RegisterRequest awaitRegistration() throws InterruptedException {
    RegisterRequest r = registrations.poll(10, TimeUnit.SECONDS);
    if (r == null) {
      throw new AssertionError("the plugin did not register");
    }
    return r;
  }

  private DevicePluginGrpc.DevicePluginBlockingStub stub() {
    if (plugin == null) {
      plugin = UnixSockets.connect(directory.resolve("nvidia-gpu.sock"));
    }
    return DevicePluginGrpc.newBlockingStub(plugin).withDeadlineAfter(10, TimeUnit.SECONDS);
  }

  /** Opens ListAndWatch; updates queue up in {@link #nextList}. */
  void watch() {
    if (plugin == null) {
      plugin = UnixSockets.connect(directory.resolve("nvidia-gpu.sock"));
    }
    DevicePluginGrpc.newStub(plugin).listAndWatch(Empty.getDefaultInstance(), new StreamObserver<>() {
      @Override
      public void onNext(ListAndWatchResponse value) {
        lists.add(value);
      }

      @Override
      public void onError(Throwable t) {}

      @Override
      public void onCompleted() {}
    });
  }

  ListAndWatchResponse nextList(Duration timeout) throws InterruptedException {
    ListAndWatchResponse r = lists.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
    if (r == null) {
      throw new AssertionError("no ListAndWatch update within " + timeout);
    }
    return r;
  }

  /** One Allocate call with one container asking for {@code ids}. */
  public AllocateResponse allocate(List<String> ids) {
    return stub().allocate(AllocateRequest.newBuilder().addContainerRequests(ContainerAllocateRequest.newBuilder().addAllDevicesIds(ids)).build());
  }

  DevicePluginGrpc.DevicePluginBlockingStub pluginStub() {
    return stub();
  }

  @Override
  public void close() {
    stop();
  }
}
