// The simulation: N bodies under softened gravity, integrated with a fixed step. Written
// so that the state after any number of steps is the same bit for bit however the bodies
// are split between threads or processes:
// - the force on a body sums over all bodies in one fixed order, from the full position
//   array every thread holds after the exchange;
// - the only per-step quantities combined across threads are an integer (the kinetic
//   energy in fixed point, summed exactly) and a maximum (exact in floating point);
// - only +, -, *, / and sqrt are used (correctly rounded everywhere), and the build turns
//   off contraction into fused multiply-adds.
// This is the lockstep discipline of deterministic games and distributed simulation.
#ifndef DISTRIBUTE_EXAMPLES_ENGINE_NBODY_H_
#define DISTRIBUTE_EXAMPLES_ENGINE_NBODY_H_

#include <cstdint>
#include <vector>

namespace engine {

// The whole state. Positions and velocities are interleaved (x0, y0, x1, y1, ...), so that
// a thread's slice is one contiguous [count, 2] block for the exchange.
struct World {
  int32_t num_bodies = 0;
  std::vector<double> position;
  std::vector<double> velocity;
};

// A deterministic start: bodies on a jittered disc with a slight rotation.
World MakeWorld(int32_t num_bodies, uint64_t seed);

// Kicks the velocities of bodies [begin, end) by the gravity of every body in `position`
// (the full array) over `dt`.
void Kick(const std::vector<double>& position, int32_t begin, int32_t end, double dt,
          std::vector<double>& velocity);

// The kinetic energy of bodies [begin, end) in fixed point (2^-24 units), and their
// largest squared speed.
int64_t KineticEnergyFixed(const std::vector<double>& velocity, int32_t begin, int32_t end);
double MaxSpeedSquared(const std::vector<double>& velocity, int32_t begin, int32_t end);

// The step's controls, computed from the combined quantities: a thermostat factor that
// brings the total kinetic energy back under a bound, and the drift step, shortened when
// the fastest body would move too far.
struct Controls {
  double velocity_scale;
  double drift_dt;
};
Controls ComputeControls(int64_t total_kinetic_energy_fixed, double max_speed_squared, int32_t num_bodies,
                         double dt);

// Scales the velocities and moves the positions of bodies [begin, end).
void Drift(const Controls& controls, int32_t begin, int32_t end, std::vector<double>& velocity,
           std::vector<double>& position);

// FNV-1a over the bytes of every position and velocity.
uint64_t StateHash(const World& world);

// The plain single-threaded simulation, with no library: the reference every distributed
// run must match bit for bit. Calls on_hash(step, hash) every `hash_every` steps.
template <class OnHash>
void RunReference(World& world, int64_t steps, double dt, int64_t hash_every, OnHash&& on_hash) {
  const int32_t n = world.num_bodies;
  for (int64_t step = 1; step <= steps; ++step) {
    Kick(world.position, 0, n, dt, world.velocity);
    const Controls c = ComputeControls(KineticEnergyFixed(world.velocity, 0, n),
                                       MaxSpeedSquared(world.velocity, 0, n), n, dt);
    Drift(c, 0, n, world.velocity, world.position);
    if (step % hash_every == 0 || step == steps) on_hash(step, StateHash(world));
  }
}

}  // namespace engine

#endif  // DISTRIBUTE_EXAMPLES_ENGINE_NBODY_H_
