import { ormOptions } from './src/persistence/database.js';

// For the MikroORM CLI; the server builds the same options in its composition root.
export default await ormOptions({ databaseUrl: process.env.DATABASE_URL, dataDir: process.env.DATA_DIR ?? './data' });
