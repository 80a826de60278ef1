import { databaseCatalogOperations, databaseRouter } from './database.router.js';
import { deploymentOperations, deploymentRouter } from './deployment.router.js';
import { door } from './doors.js';
import { domainOperations } from './domain.router.js';
import { envOperations, envRouter } from './env.router.js';
import { environmentOperations } from './environment.router.js';
import { CREATE_SERVICE_BODY, serviceOperations, serviceRouter } from './service.router.js';

/*
 * The general API (docs/general-api.md): each of its paths a second door to a procedure of the
 * capability routers, with its method, path, documentation and the names its input uses. A door
 * onto a detailed procedure (PUT /api/apps/{appId} is PATCH /api/services/{serviceId}) checks, answers
 * and calls what that procedure does; one onto an operation with no detailed path (a project's
 * domains) is that operation's only door. The keys are the doors' procedure paths (`apps.get`).
 */

const APPS = ['Apps'];
const DEPLOYMENTS = ['Deployments'];
const VARIABLES = ['Environment variables'];
const DOMAINS = ['Domains'];
const DATABASES = ['Databases'];

export const generalApi = {
  apps: {
    listInEnvironment: door(environmentOperations.services, {
      method: 'GET',
      path: '/api/environments/{environmentId}/apps',
      tags: APPS,
      summary: 'The services (apps) of an environment',
    }),
    createInEnvironment: door(serviceOperations.createInEnvironment, {
      method: 'POST',
      path: '/api/environments/{environmentId}/apps',
      tags: APPS,
      summary: 'Create a service in an environment: the body of POST /api/projects/{projectId}/services',
      body: CREATE_SERVICE_BODY,
    }),
    get: door(serviceOperations.get, {
      method: 'GET',
      path: '/api/apps/{appId}',
      tags: APPS,
      summary: 'A service (an app), as the service overview shows it',
      input: { appId: 'serviceId' },
    }),
    update: door(serviceRouter.update, {
      method: 'PUT',
      path: '/api/apps/{appId}',
      tags: APPS,
      summary: 'Change how a service is built and run: the fields of PATCH /api/services/{serviceId}; fields left out keep their value',
      input: { appId: 'serviceId' },
    }),
    delete: door(serviceRouter.delete, {
      method: 'DELETE',
      path: '/api/apps/{appId}',
      tags: APPS,
      summary: 'Delete a service with its domains, variables, deployments and logs',
      input: { appId: 'serviceId' },
    }),
  },

  deploy: {
    service: door(deploymentRouter.create, {
      method: 'POST',
      path: '/api/services/{serviceId}/deploy',
      tags: DEPLOYMENTS,
      summary: 'Queue a deployment of the service (as POST /api/services/{serviceId}/deployments)',
    }),
    project: door(deploymentOperations.createForProject, {
      method: 'POST',
      path: '/api/projects/{projectId}/deploy',
      tags: DEPLOYMENTS,
      summary: "Queue a deployment of every service of one of the project's environments",
      description:
        'The environment named by `environmentId`, or the default one (`production`). An empty list for an environment without services. 400 on `environmentId` for an environment of another project.',
    }),
  },

  variables: {
    shared: door(envOperations.shared, {
      method: 'GET',
      path: '/api/projects/{projectId}/env',
      tags: VARIABLES,
      summary: 'Shared project variables: every service sees them unless it defines the same key; ${shared.KEY} references them',
    }),
    replaceShared: door(envOperations.replaceShared, {
      method: 'PUT',
      path: '/api/projects/{projectId}/env',
      tags: VARIABLES,
      summary: 'Replace the shared project variables: a map of KEY to a value, or to {value, secret}; keys left out are deleted',
    }),
    list: door(envOperations.list, {
      method: 'GET',
      path: '/api/services/{serviceId}/variables',
      tags: VARIABLES,
      summary: "The service's own variables, as the overview lists them (secrets masked, references resolved)",
    }),
    create: door(envOperations.create, {
      method: 'POST',
      path: '/api/services/{serviceId}/variables',
      tags: VARIABLES,
      summary: 'Add a variable (an existing key gets the new value, as POST /api/services/{serviceId}/env)',
    }),
    update: door(envOperations.update, {
      method: 'PUT',
      path: '/api/services/{serviceId}/variables/{variableId}',
      tags: VARIABLES,
      summary: 'Change the value of a variable (and whether it is secret); the key stays',
    }),
    delete: door(envRouter.delete, {
      method: 'DELETE',
      path: '/api/services/{serviceId}/variables/{variableId}',
      tags: VARIABLES,
      summary: 'Delete a variable',
      input: { variableId: 'envId' },
    }),
  },

  projectDomains: {
    list: door(domainOperations.listForProject, {
      method: 'GET',
      path: '/api/projects/{projectId}/domains',
      tags: DOMAINS,
      summary: 'The domains of every service of a project',
    }),
    create: door(domainOperations.createInProject, {
      method: 'POST',
      path: '/api/projects/{projectId}/domains',
      tags: DOMAINS,
      summary: 'Add a hostname to a web service of the project (named in the body) and reload the proxy',
    }),
    delete: door(domainOperations.deleteById, {
      method: 'DELETE',
      path: '/api/domains/{domainId}',
      tags: DOMAINS,
      summary: 'Remove a hostname and reload the proxy',
    }),
  },

  databaseServices: {
    list: door(databaseCatalogOperations.list, {
      method: 'GET',
      path: '/api/databases',
      tags: DATABASES,
      summary: 'Database services of every project visible to the key',
    }),
    create: door(databaseCatalogOperations.create, {
      method: 'POST',
      path: '/api/databases',
      tags: DATABASES,
      summary: 'Create a database service in the project named in the body (as a database:<engine> service); deploy it to run it',
    }),
    get: door(databaseCatalogOperations.get, {
      method: 'GET',
      path: '/api/databases/{databaseId}',
      tags: DATABASES,
      summary: 'A database service',
    }),
    delete: door(databaseCatalogOperations.delete, {
      method: 'DELETE',
      path: '/api/databases/{databaseId}',
      tags: DATABASES,
      summary: 'Delete a database service with its container, volume and variables',
    }),
    start: door(databaseCatalogOperations.start, {
      method: 'POST',
      path: '/api/databases/{databaseId}/start',
      tags: DATABASES,
      summary: 'Start a stopped database again with its data (a database that is not stopped is left as it is)',
    }),
    stop: door(databaseCatalogOperations.stop, {
      method: 'POST',
      path: '/api/databases/{databaseId}/stop',
      tags: DATABASES,
      summary: 'Stop the database container and keep its volume (status `stopped`; 409 not_running when it does not run)',
    }),
    query: door(databaseRouter.query, {
      method: 'POST',
      path: '/api/databases/{databaseId}/query',
      tags: DATABASES,
      summary: 'Run one statement, as POST /api/services/{serviceId}/database/query',
      input: { databaseId: 'serviceId' },
    }),
  },
};
