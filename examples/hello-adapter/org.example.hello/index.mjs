// The code of the example adapter: a module whose default export is an AIOS Device `Handler`
// ({ name, create(env) → FunctionDefinition[] }). The signed card (adapter.json) is what the agent
// publishes; this module supplies `run` for each skill id the card lists.
export default {
  name: 'org.example.hello',
  create(env) {
    env.log.info({}, 'hello adapter ready');
    return [
      {
        descriptor: { id: 'hello.greet' },
        describe: (args) => `Greet ${args.name}`,
        async run(args, ctx) {
          if (ctx.signal.aborted) throw new Error('cancelled');
          return { greeting: `Hello, ${args.name}!` };
        },
      },
    ];
  },
};
